// Command hutch-init is the pid 1 of containers run with --init (it appears
// as /sbin/docker-init): it starts the command given after "--", forwards
// the signals it receives to it, reaps every orphan that the kernel hands
// it, and exits with the command's status (128+N for death by signal N).
// It is built static (CGO_ENABLED=0) so that it runs in any image.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "docker-init: usage: docker-init -- command [args...]")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Its own process group, so that a terminal's Ctrl-C reaches it as it
	// would without an init, and signals we forward reach it alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: isTerminal()}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "docker-init: %v\n", err)
		os.Exit(127)
	}
	child := cmd.Process.Pid
	for sig := range sigs {
		s := sig.(syscall.Signal)
		if s != syscall.SIGCHLD {
			syscall.Kill(child, s)
			continue
		}
		// Reap everything that exited; leave when the command did.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
			if pid == child {
				if ws.Signaled() {
					os.Exit(128 + int(ws.Signal()))
				}
				os.Exit(ws.ExitStatus())
			}
		}
	}
}

func isTerminal() bool {
	_, err := unixIoctlGetTermios(0)
	return err == nil
}
