package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// idleAfter is how long after a idleBurst the idle tree is read again: the
// engine returns the idleBurst's heap after a quiet spell (daemon/listen.go,
// 10 s), and the runtime's own scavenger would take minutes.
const idleAfter = 35 * time.Second

// idleBurst is the number of short containers (docker run --rm busybox true)
// of the idle phase.
const idleBurst = 36

// Idle is the idle phase: the daemon's tree before any container, just
// after a idleBurst of short containers, once it has been quiet again, and
// once quiet after a second burst; then the time from a client's
// connection to the answer when the connection is what starts the daemon
// (socket activation).
type Idle struct {
	Fresh       MemSample `json:"fresh"`
	AfterBurst  MemSample `json:"after_burst"`
	AfterIdle   MemSample `json:"after_idle"`
	AfterSecond MemSample `json:"after_second"`
	// Growth is AfterIdle − Fresh, tree RSS (KiB): what the first burst
	// leaves, the Go runtime's one-time share included.
	Growth int `json:"growth_kib"`
	// Repeat is AfterSecond − AfterIdle, tree RSS (KiB): what a burst
	// leaves once the engine has run one.
	Repeat     int    `json:"repeat_kib"`
	Activation Dist   `json:"activation"`
	Comment    string `json:"comment"`
}

func benchIdle(ctx context.Context, e *env, res *Results) error {
	if err := e.stopDaemon(); err != nil {
		return err
	}
	d, err := e.daemon(ctx)
	if err != nil {
		return err
	}
	m := &res.Idle
	m.Comment = fmt.Sprintf("tree as in the memory phase; fresh: %s after start; after the burst of %d docker run --rm; after idle: %s after the last; after second: %s after a second burst", idleAfter, idleBurst, idleAfter, idleAfter)
	// Fresh is read as quiet as the last reading will be.
	if err := sleep(ctx, idleAfter); err != nil {
		return err
	}
	if m.Fresh, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	if err := idleRun(ctx, d, e.busybox); err != nil {
		return err
	}
	if m.AfterBurst, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	if err := sleep(ctx, idleAfter); err != nil {
		return err
	}
	if m.AfterIdle, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	if err := idleRun(ctx, d, e.busybox); err != nil {
		return err
	}
	if err := sleep(ctx, idleAfter); err != nil {
		return err
	}
	if m.AfterSecond, err = readTree(d.cmd.Process.Pid); err != nil {
		return err
	}
	m.Growth = m.AfterIdle.TreeRSS - m.Fresh.TreeRSS
	m.Repeat = m.AfterSecond.TreeRSS - m.AfterIdle.TreeRSS
	if err := e.stopDaemon(); err != nil {
		return err
	}
	return benchActivation(ctx, e, m)
}

// idleRun runs idleBurst short containers one after another.
func idleRun(ctx context.Context, d *daemon, ref string) error {
	for i := range idleBurst {
		if err := runRemoved(ctx, d.api, ref); err != nil {
			return fmt.Errorf("container %d: %w (daemon log %s)", i+1, err, d.logPath)
		}
	}
	return nil
}

// runRemoved is docker run --rm busybox true.
func runRemoved(ctx context.Context, api *client.Client, ref string) error {
	created, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"true"}},
		HostConfig: &containertypes.HostConfig{AutoRemove: true},
	})
	if err != nil {
		return err
	}
	wait := api.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: containertypes.WaitConditionRemoved})
	if _, err := api.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return err
	}
	select {
	case r := <-wait.Result:
		if r.StatusCode != 0 {
			return fmt.Errorf("exit %d", r.StatusCode)
		}
		return nil
	case err := <-wait.Error:
		return err
	}
}

// activationRuns is how many socket-activated starts are timed.
const activationRuns = 5

// benchActivation holds the daemon's socket as systemd's hutch.socket
// does, and times a client's GET /_ping from its connect to the answer
// while the connection starts the daemon (--idle-exit 1s ends each).
func benchActivation(ctx context.Context, e *env, m *Idle) error {
	d, err := e.startDaemon(ctx, "daemon") // the environment and storage of the others
	if err != nil {
		return err
	}
	env, sock := d.env, d.socket
	if err := d.stop(); err != nil {
		return err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	l.SetUnlinkOnClose(true)
	defer l.Close()
	f, err := l.File()
	if err != nil {
		return err
	}
	defer f.Close()
	logf, err := os.Create(filepath.Join(e.dir, "activation.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	for range activationRuns {
		started := make(chan error, 1)
		var cmd *exec.Cmd
		go func() {
			// systemd's part: wait for a client, start the service.
			fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, 30_000)
				if err == unix.EINTR {
					continue
				}
				if err != nil || n == 0 {
					started <- fmt.Errorf("no client in the socket: %d %v", n, err)
					return
				}
				break
			}
			cmd = exec.Command("sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" daemon --idle-exit 1s`, e.cfg.hutch)
			cmd.Env, cmd.ExtraFiles, cmd.Stdout, cmd.Stderr = env, []*os.File{f}, logf, logf
			started <- cmd.Start()
		}()
		t0 := time.Now()
		c, err := net.Dial("unix", sock)
		if err != nil {
			return err
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(c, "GET /_ping HTTP/1.1\r\nHost: hutch\r\nConnection: close\r\n\r\n"); err != nil {
			c.Close()
			return err
		}
		b, err := io.ReadAll(c)
		took := time.Since(t0)
		c.Close()
		if err := <-started; err != nil {
			return fmt.Errorf("starting the daemon: %w", err)
		}
		if cmd == nil {
			return fmt.Errorf("no daemon started")
		}
		if err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 200") {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("/_ping through the activated socket: %q %v (see %s)", b, err, logf.Name())
		}
		m.Activation.add(took)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("idle exit: %w (see %s)", err, logf.Name())
		}
	}
	m.Activation.summarize()
	return nil
}

func (m Idle) print(w io.Writer) {
	if m.Fresh.TreeRSS == 0 {
		return
	}
	fmt.Fprintf(w, "idle tree RSS (MiB): fresh %.1f, after %d containers %.1f, %s later %.1f (%+.1f), %s after a second burst %.1f (%+.1f)",
		mib(m.Fresh.TreeRSS), idleBurst, mib(m.AfterBurst.TreeRSS), idleAfter, mib(m.AfterIdle.TreeRSS), mib(m.Growth),
		idleAfter, mib(m.AfterSecond.TreeRSS), mib(m.Repeat))
	for _, p := range m.AfterSecond.Procs {
		fmt.Fprintf(w, " [%s %.1f]", p.Name, mib(p.RSS))
	}
	fmt.Fprintln(w)
	if m.Activation.N > 0 {
		fmt.Fprintf(w, "socket-activated start, connect to /_ping answer (ms): median %.0f, min %.0f, max %.0f (%d)\n",
			m.Activation.Median, m.Activation.Min, m.Activation.Max, m.Activation.N)
	}
}
