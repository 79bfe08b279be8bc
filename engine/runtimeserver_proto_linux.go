package engine

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// startRuntimeServer starts hutch-runtime's server when
// HUTCH_RUNTIME_SERVER names its socket (PROTOTYPE, issue 7).
func startRuntimeServer(bin string) {
	path := os.Getenv("HUTCH_RUNTIME_SERVER")
	if path == "" || bin == "" {
		return
	}
	cmd := exec.Command(bin, "serve", path)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	_ = os.Remove(path)
	if err := cmd.Start(); err != nil {
		return
	}
	go func() { _ = cmd.Wait() }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
