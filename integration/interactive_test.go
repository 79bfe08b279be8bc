//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/console"
	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// dockerCmd is the docker CLI aimed at d, for tests that need its stdio.
func dockerCmd(t *testing.T, d *daemon, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(dockerCLI(t), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+t.TempDir())
	return cmd
}

// runIn runs the docker CLI with stdin and returns stdout, stderr and the
// exit code.
func runIn(t *testing.T, d *daemon, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := dockerCmd(t, d, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("docker %v hung\nstdout %q\nstderr %q\n--- daemon ---\n%s", args, so.String(), se.String(), d.Log())
	}
	return so.String(), se.String(), cmd.ProcessState.ExitCode()
}

func TestInteractiveStdin(t *testing.T) {
	d, ref := pulled(t)
	t.Run("pipe", func(t *testing.T) {
		if out, se, code := runIn(t, d, "piped\n", "run", "-i", "--rm", ref, "cat"); out != "piped\n" || code != 0 {
			t.Errorf("echo piped | docker run -i cat = %q %q %d", out, se, code)
		}
	})
	t.Run("heredoc", func(t *testing.T) {
		out, se, code := runIn(t, d, "echo one\necho two >&2\necho three\nexit 3\n", "run", "-i", "--rm", ref, "sh")
		if out != "one\nthree\n" || se != "two\n" || code != 3 {
			t.Errorf("sh <<EOF = %q %q %d", out, se, code)
		}
	})
	t.Run("a megabyte", func(t *testing.T) {
		in := strings.Repeat("0123456789abcdef", 1<<16)
		if out, se, code := runIn(t, d, in, "run", "-i", "--rm", ref, "wc", "-c"); strings.TrimSpace(out) != "1048576" || code != 0 {
			t.Errorf("wc -c = %q %q %d", out, se, code)
		}
	})
	t.Run("attach", func(t *testing.T) {
		id := dockerOK(t, d, "run", "-d", "-i", ref, "sh", "-c", "read l; echo got $l; exit 2")
		if out, se, code := runIn(t, d, "hi\n", "attach", id); out != "got hi\n" || code != 2 {
			t.Errorf("echo hi | docker attach = %q %q %d", out, se, code)
		}
	})
	t.Run("sdk stdin once", func(t *testing.T) {
		ctx := context.Background()
		c := d.Client(t)
		cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{
			Image: ref, Cmd: []string{"sh", "-c", "cat; echo eof"}, OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true,
		}})
		if err != nil {
			t.Fatal(err)
		}
		att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		defer att.Close()
		if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		att.Conn.Write([]byte("from the sdk\n"))
		att.CloseWrite()
		var so, se bytes.Buffer
		if _, err := stdcopy.StdCopy(&so, &se, att.Reader); err != nil || so.String() != "from the sdk\neof\n" {
			t.Errorf("stdout %q stderr %q err %v", so.String(), se.String(), err)
		}
	})
}

// A daemon started with SIGHUP and SIGINT ignored (nohup; `hutch daemon &`
// in a script ignores SIGINT) does not hand them down to its containers:
// a shell cannot trap a signal ignored when it started, and an ignored
// SIGINT is a lost Ctrl-C. Before, both stayed ignored through the shim,
// hutch-runtime and the init (TestSignals' trap of SIGHUP failed under
// nohup).
func TestIgnoredSignalsNotInherited(t *testing.T) {
	ref := busybox(t)
	env, rt, data := daemonEnv(t)
	d := startDaemonCmd(t, env, filepath.Join(rt, "hutch.sock"),
		exec.Command("sh", "-c", `trap "" HUP INT; exec "$0" daemon --live-restore=false`, hutchBin(t)))
	d.Runtime, d.Data = rt, data
	if out, err := d.Docker(t, "pull", "-q", ref); err != nil {
		t.Fatalf("docker pull: %v\n%s", err, out)
	}
	const hupInt = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1)
	ignored := func(status string) uint64 {
		for _, line := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				return n
			}
		}
		t.Fatalf("no SigIgn in %q", status)
		return 0
	}
	// The engine, hutch-ns's child without live restore, started before
	// hutch-ns catches signals to forward them, and so with both still
	// ignored.
	// Each thread lists the children it started: Go starts a process from
	// whichever thread runs the goroutine.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", d.cmd.Process.Pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("hutch-ns's threads: %v %v", tasks, err)
	}
	engineIgnores := uint64(0)
	for _, task := range tasks {
		kids, _ := os.ReadFile(task)
		for _, pid := range strings.Fields(string(kids)) {
			if b, err := os.ReadFile("/proc/" + pid + "/status"); err == nil {
				engineIgnores |= ignored(string(b))
			}
		}
	}
	if engineIgnores&(1<<(syscall.SIGHUP-1)) == 0 {
		t.Fatalf("hutch-ns's children ignore %#x, not SIGHUP: the test's set-up failed", engineIgnores)
	}
	if ign := ignored(dockerOK(t, d, "run", "--rm", ref, "cat", "/proc/self/status")); ign&hupInt != 0 {
		t.Errorf("a container's process ignores %#x", ign)
	}
	if out := dockerOK(t, d, "run", "--rm", ref, "sh", "-c", `trap "echo got HUP" HUP; trap "echo got INT" INT; kill -HUP $$; kill -INT $$; echo after`); out != "got HUP\ngot INT\nafter" {
		t.Errorf("traps in a container: %q", out)
	}
	id := dockerOK(t, d, "run", "-d", ref, "sleep", "100")
	if ign := ignored(dockerOK(t, d, "exec", id, "cat", "/proc/self/status")); ign&hupInt != 0 {
		t.Errorf("an exec'd process ignores %#x", ign)
	}
	dockerOK(t, d, "rm", "-f", id)
}

// A signal sent as soon as a container's first output arrives, while its
// start may still be under way, reaches the process: docker run's signal
// proxy forwards a Ctrl-C at once, and Docker's kill waits for the start
// to end. Answered from the record as it was, hutch's said "not running"
// and the signal was lost: TestSignals' Ctrl-C hung about 1 run in 30 on
// a busy machine. Ten containers at a time keep the engine busy, which
// widens the moment between a process's first output and its start's
// record.
func TestKillDuringStart(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	// begin creates a container of sh -c script (marker its $0), starts it
	// attached, in the background, and returns at its first output, with
	// the start's result to come.
	begin := func(script, marker string) (id string, started <-chan error, err error) {
		cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{
			Image: ref, Cmd: []string{"sh", "-c", script, marker}, AttachStdout: true,
		}})
		if err != nil {
			return "", nil, err
		}
		t.Cleanup(func() { c.ContainerRemove(ctx, cr.ID, client.ContainerRemoveOptions{Force: true}) })
		att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdout: true})
		if err != nil {
			return "", nil, err
		}
		t.Cleanup(att.Close)
		result := make(chan error, 1)
		go func() {
			_, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{})
			result <- err
		}()
		if _, err := att.Reader.Read(make([]byte, 1)); err != nil {
			return "", nil, fmt.Errorf("no output: %w", err)
		}
		return cr.ID, result, nil
	}
	one := func(i int) error {
		id, started, err := begin(`trap "exit 9" INT; echo ready; while :; do sleep 0.1; done`, "sh")
		if err != nil {
			return fmt.Errorf("container %d: %w", i, err)
		}
		wait := c.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: containertypes.WaitConditionNextExit})
		if _, err := c.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "INT"}); err != nil {
			return fmt.Errorf("container %d: SIGINT at its first output: %w", i, err)
		}
		if err := <-started; err != nil {
			return fmt.Errorf("container %d: start: %w", i, err)
		}
		select {
		case res := <-wait.Result:
			if res.StatusCode != 9 {
				return fmt.Errorf("container %d: exit status %d, want 9 (the trap of SIGINT)", i, res.StatusCode)
			}
		case err := <-wait.Error:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("container %d: the SIGINT did not end it", i)
		}
		return nil
	}
	// docker rm -f at the first output: the start ends first, then the
	// container is killed and removed, with nothing of it left running.
	removeAtOutput := func(i int) error {
		marker := fmt.Sprintf("kill-during-start-%d", i)
		id, started, err := begin(`echo ready; while :; do sleep 0.1; done`, marker)
		if err != nil {
			return fmt.Errorf("container %d: %w", i, err)
		}
		if len(processesWith(marker)) == 0 {
			return fmt.Errorf("container %d: its shell is not to be found in /proc", i)
		}
		if _, err := c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			return fmt.Errorf("container %d: rm -f at its first output: %w", i, err)
		}
		if err := <-started; err != nil {
			return fmt.Errorf("container %d: start, with rm -f at its first output: %w", i, err)
		}
		if _, err := c.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); !errdefs.IsNotFound(err) {
			return fmt.Errorf("container %d after rm -f: %v", i, err)
		}
		if pids := processesWith(marker); len(pids) > 0 {
			return fmt.Errorf("container %d: its processes %v outlived rm -f", i, pids)
		}
		return nil
	}
	for _, f := range []func(int) error{one, removeAtOutput} {
		for round := range 3 {
			errs := make(chan error, 10)
			for i := range 10 {
				go func() { errs <- f(round*10 + i) }()
			}
			for range 10 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		}
	}
}

// processesWith returns the pids of the processes whose command line has
// word as an argument.
func processesWith(word string) []int {
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), word) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ptySession is the docker CLI on a pseudo-terminal, as in a terminal
// emulator: raw mode, SIGWINCH on resize, control characters.
type ptySession struct {
	t    *testing.T
	pty  console.Console
	cmd  *exec.Cmd
	out  *syncBuffer
	mark int // output before it was sent earlier input
	done chan struct{}
}

func startPty(t *testing.T, d *daemon, rows, cols uint16, args ...string) *ptySession {
	t.Helper()
	pty, slavePath, err := console.NewPty()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Resize(console.WinSize{Height: rows, Width: cols}); err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(slavePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	s := &ptySession{t: t, pty: pty, cmd: dockerCmd(t, d, args...), out: &syncBuffer{}, done: make(chan struct{})}
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = slave, slave, slave
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		io.Copy(s.out, pty) // ends with EIO once the CLI is gone
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		pty.Close()
	})
	return s
}

// send types in; expect then looks at the output that follows.
func (s *ptySession) send(in string) {
	s.mark = len(s.out.String())
	if _, err := s.pty.Write([]byte(in)); err != nil {
		s.t.Fatal(err)
	}
}

func (s *ptySession) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.out.String()[s.mark:], want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("no %q in the terminal; it shows:\n%q", want, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ptySession) resize(rows, cols uint16) {
	if err := s.pty.Resize(console.WinSize{Height: rows, Width: cols}); err != nil {
		s.t.Fatal(err)
	}
}

// wait returns the CLI's exit code.
func (s *ptySession) wait() int {
	s.t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- s.cmd.Wait() }()
	select {
	case <-errc:
	case <-time.After(time.Minute):
		s.t.Fatalf("the CLI did not exit; the terminal shows:\n%q", s.out.String())
	}
	return s.cmd.ProcessState.ExitCode()
}

// stty asks the shell on the terminal for its size until it matches: the
// CLI sends a resize when it sees SIGWINCH, which may come after the
// command.
func (s *ptySession) stty(want string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.send("stty size\r")
		s.expect("# ")
		if strings.Contains(s.out.String()[s.mark:], want+"\r\n") {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stty size never said %q:\n%q", want, s.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestInteractiveTTY(t *testing.T) {
	d, ref := pulled(t)
	t.Run("run -it", func(t *testing.T) {
		s := startPty(t, d, 30, 100, "run", "-it", "--rm", ref, "sh")
		s.expect("/ # ")
		// The first command sees the terminal's size: it is given at
		// create, not only by the resize that follows the start.
		s.send("stty size; tty; echo $TERM-$((6*7))\r")
		s.expect("xterm-42")
		for _, want := range []string{"30 100\r\n", "/dev/pts/"} {
			if !strings.Contains(s.out.String(), want) {
				t.Errorf("no %q in %q", want, s.out.String())
			}
		}
		s.resize(40, 120)
		s.stty("40 120")
		// Ctrl-C interrupts the foreground job, not the session.
		s.send("sleep 1000\r")
		time.Sleep(300 * time.Millisecond)
		s.send("\x03")
		s.expect("/ # ")
		s.send("echo $((7*6))x\r")
		s.expect("42x")
		s.send("exit 4\r")
		if code := s.wait(); code != 4 {
			t.Errorf("exit code %d, want 4\n%q", code, s.out.String())
		}
	})
	t.Run("ctrl-d", func(t *testing.T) {
		s := startPty(t, d, 24, 80, "run", "-it", "--rm", ref, "sh")
		s.expect("/ # ")
		s.send("\x04")
		if code := s.wait(); code != 0 {
			t.Errorf("exit code %d after ctrl-d\n%q", code, s.out.String())
		}
	})
	for _, keys := range []string{"", "ctrl-x,y"} {
		t.Run("detach keys "+keys, func(t *testing.T) {
			name := "detach" + strconv.Itoa(len(keys))
			args := []string{"run", "-it", "--name", name}
			seq := "\x10\x11"
			if keys != "" {
				args, seq = append(args, "--detach-keys", keys), "\x18y"
			}
			s := startPty(t, d, 24, 80, append(args, ref, "sh")...)
			s.expect("/ # ")
			s.send(seq)
			if code := s.wait(); code != 0 {
				t.Errorf("exit code %d after the detach keys\n%q", code, s.out.String())
			}
			if st := dockerOK(t, d, "inspect", "-f", "{{.State.Running}}", name); st != "true" {
				t.Errorf("after detaching the container is running=%s", st)
			}
			// docker attach takes the terminal back.
			a := startPty(t, d, 24, 80, "attach", name)
			a.send("echo $((5*5))z\r")
			a.expect("25z")
			a.send("exit 3\r")
			if code := a.wait(); code != 3 {
				t.Errorf("attach: exit code %d\n%q", code, a.out.String())
			}
			dockerOK(t, d, "rm", name)
		})
	}
	t.Run("run -t without a terminal", func(t *testing.T) {
		out := dockerOK(t, d, "run", "-t", "--rm", ref, "sh", "-c", "tty; echo $TERM; echo err >&2")
		// One raw stream: stderr comes through it, without stdcopy headers.
		if out != "/dev/pts/0\r\nxterm\r\nerr" {
			t.Errorf("run -t = %q", out)
		}
	})
	t.Run("exec -it", func(t *testing.T) {
		id := dockerOK(t, d, "run", "-d", ref, "sleep", "1000")
		s := startPty(t, d, 33, 99, "exec", "-it", id, "sh")
		s.expect("# ")
		s.send("stty size; tty; echo $TERM-$((6*7))\r")
		s.expect("xterm-42")
		if !strings.Contains(s.out.String(), "33 99\r\n") {
			t.Errorf("no initial size in %q", s.out.String())
		}
		s.resize(20, 70)
		s.stty("20 70")
		s.send("exit 6\r")
		if code := s.wait(); code != 6 {
			t.Errorf("exec -it exit code %d\n%q", code, s.out.String())
		}
		dockerOK(t, d, "rm", "-f", id)
	})
}

func TestExecCLI(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", "-e", "FROMRUN=1", "-w", "/home", ref, "sleep", "1000")
	tests := []struct {
		name       string
		stdin      string
		args       []string
		out, err   string
		errContent string
		code       int
	}{
		{name: "plain", args: []string{"echo", "hi"}, out: "hi\n"},
		{name: "stdin", stdin: "data\n", args: []string{"-i", "@", "cat"}, out: "data\n"},
		{name: "exit code", args: []string{"sh", "-c", "exit 7"}, code: 7},
		{name: "stdout and stderr", args: []string{"sh", "-c", "echo out; echo err >&2"}, out: "out\n", err: "err\n"},
		{name: "user id", args: []string{"-u", "1234", "@", "id", "-u"}, out: "1234\n"},
		{name: "user name", args: []string{"-u", "user", "@", "id", "-un"}, out: "user\n"},
		{name: "unknown user", args: []string{"-u", "nosuch", "@", "true"}, err: "Error response from daemon: unable to find user nosuch: no matching entries in passwd file\n", code: 1},
		{name: "working dir", args: []string{"-w", "/tmp", "@", "pwd"}, out: "/tmp\n"},
		{name: "container's working dir", args: []string{"pwd"}, out: "/home\n"},
		{name: "env", args: []string{"-e", "A=B", "@", "sh", "-c", "echo $A$FROMRUN"}, out: "B1\n"},
		// More than the shim's 4 KiB line buffer: its request was cut.
		{name: "long env", args: []string{"-e", "LONG=" + strings.Repeat("x", 100000), "@", "sh", "-c", "echo ${#LONG}"}, out: "100000\n"},
		{name: "missing command", args: []string{"nosuch"}, errContent: "executable file not found", code: 127},
		{name: "not executable", args: []string{"/etc/passwd"}, errContent: "permission denied", code: 126},
		{name: "missing path", args: []string{"/nonexist/x"}, errContent: "no such file or directory", code: 127},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// "@" marks where the container goes, after the options.
			args := []string{"exec"}
			if i := indexOf(tc.args, "@"); i >= 0 {
				args = append(append(append(args, tc.args[:i]...), id), tc.args[i+1:]...)
			} else {
				args = append(append(args, id), tc.args...)
			}
			out, se, code := runIn(t, d, tc.stdin, args...)
			if code != tc.code || (tc.errContent == "" && (out != tc.out || se != tc.err)) || !strings.Contains(out+se, tc.errContent) {
				t.Errorf("docker %v = %q %q %d", args, out, se, code)
			}
		})
	}
	t.Run("detached", func(t *testing.T) {
		dockerOK(t, d, "exec", "-d", id, "sh", "-c", "echo done > /tmp/marker")
		waitFor(t, func() bool { out, _ := d.Docker(t, "exec", id, "cat", "/tmp/marker"); return out == "done\n" })
	})
	t.Run("privileged", func(t *testing.T) {
		capEff := func(args ...string) uint64 {
			out := dockerOK(t, d, append(append([]string{"exec"}, args...), id, "sh", "-c", "grep CapEff /proc/self/status")...)
			v, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(out, "CapEff:")), 16, 64)
			if err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			return v
		}
		plain, priv := capEff(), capEff("--privileged")
		if plain&^priv != 0 || priv == plain {
			t.Errorf("CapEff %x, privileged %x: want a strict superset", plain, priv)
		}
		if user := capEff("-u", "1234"); user != 0 {
			t.Errorf("CapEff of uid 1234 = %x", user)
		}
	})
	t.Run("stopped container", func(t *testing.T) {
		stopped := dockerOK(t, d, "create", ref, "true")
		out, err := d.Docker(t, "exec", stopped, "true")
		if err == nil || !strings.Contains(out, "container "+stopped+" is not running") {
			t.Errorf("exec in a stopped container: %v %q", err, out)
		}
	})
	dockerOK(t, d, "rm", "-f", id)
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestExecSDK(t *testing.T) {
	d, ref := pulled(t)
	ctx := context.Background()
	c := d.Client(t)
	id := dockerOK(t, d, "run", "-d", ref, "sleep", "1000")

	ex, err := c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", "cat; echo $$ >&2; exit 5"}, AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	att, err := c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	att.Conn.Write([]byte("in\n"))
	att.CloseWrite()
	var so, se bytes.Buffer
	_, err = stdcopy.StdCopy(&so, &se, att.Reader)
	att.Close()
	if err != nil || so.String() != "in\n" || se.Len() == 0 {
		t.Errorf("stdout %q stderr %q err %v", so.String(), se.String(), err)
	}
	in, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil || in.Running || in.ExitCode != 5 || in.ContainerID != id || in.PID == 0 {
		t.Errorf("ExecInspect = %+v, %v", in, err)
	}

	// Detached, the exit code comes later.
	ex, err = c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", "read x < /dev/null; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		in, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
		return err == nil && !in.Running && in.ExitCode == 3
	})
	if _, err := c.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true}); err == nil || !strings.Contains(err.Error(), "has already run") {
		t.Errorf("second start: %v", err)
	}

	// A tty exec: the size given at start, then a resize.
	ex, err = c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh", "-c", "stty size; read x; stty size"}, TTY: true, AttachStdin: true, AttachStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	att, err = c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{TTY: true, ConsoleSize: client.ConsoleSize{Height: 11, Width: 22}})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	br := bufio.NewReader(att.Reader)
	if line, err := br.ReadString('\n'); line != "11 22\r\n" {
		t.Fatalf("first stty size = %q, %v", line, err)
	}
	if _, err := c.ExecResize(ctx, ex.ID, client.ExecResizeOptions{Height: 33, Width: 44}); err != nil {
		t.Fatal(err)
	}
	att.Conn.Write([]byte("\r"))
	rest, _ := io.ReadAll(br)
	if !strings.HasSuffix(string(rest), "33 44\r\n") {
		t.Errorf("after the resize: %q", rest)
	}

	// The detach keys of a tty exec end the stream, not the process.
	ex, err = c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"sh"}, TTY: true, AttachStdin: true, AttachStdout: true, DetachKeys: "ctrl-a,b"})
	if err != nil {
		t.Fatal(err)
	}
	att2, err := c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{TTY: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att2.Close()
	att2.Conn.Write([]byte("echo $((6*7))\r"))
	br = bufio.NewReader(att2.Reader)
	for line := ""; !strings.Contains(line, "42"); {
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatalf("no 42 before %v", err)
		}
	}
	att2.Conn.Write([]byte("\x01b"))
	att2.Conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("the stream did not end after the detach keys: %v", err)
	}
	if in, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{}); err != nil || !in.Running {
		t.Errorf("after the detach keys: %+v, %v", in, err)
	}

	// An environment over the shim's bound of a request: a clear 400,
	// and the container's shim goes on.
	ex, err = c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"true"}, Env: []string{"X=" + strings.Repeat("x", 1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecStart(ctx, ex.ID, client.ExecStartOptions{Detach: true}); !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "too long") {
		t.Errorf("exec with a 1 MiB environment: %v", err)
	}
	if out := dockerOK(t, d, "exec", id, "echo", "after"); out != "after" {
		t.Errorf("exec after the long one: %q", out)
	}

	if _, err := c.ExecInspect(ctx, "nope", client.ExecInspectOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("unknown exec: %v", err)
	}
	dockerOK(t, d, "rm", "-f", id)
	// Execs vanish with their container.
	if _, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("exec of a removed container: %v", err)
	}
}

func TestSignals(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "run", "-d", ref, "sh", "-c",
		`for s in USR1 USR2 HUP; do trap "echo got $s" $s; done; echo ready; while :; do sleep 0.1; done`)
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	for _, sig := range []struct{ arg, want string }{{"USR1", "got USR1"}, {"SIGUSR2", "got USR2"}, {"1", "got HUP"}} {
		dockerOK(t, d, "kill", "-s", sig.arg, id)
		waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, sig.want) })
	}
	if out, err := d.Docker(t, "kill", "-s", "NOPE", id); err == nil || !strings.Contains(strings.ToLower(out), "invalid signal: nope") {
		t.Errorf("kill -s NOPE: %v %q", err, out)
	}
	dockerOK(t, d, "rm", "-f", id)

	// docker stop sends the container's stop signal.
	id = dockerOK(t, d, "run", "-d", "--stop-signal", "USR2", ref, "sh", "-c", `trap "exit 5" USR2; echo ready; while :; do sleep 0.1; done`)
	waitFor(t, func() bool { out, _ := d.Docker(t, "logs", id); return strings.Contains(out, "ready") })
	dockerOK(t, d, "stop", id)
	if st := dockerOK(t, d, "inspect", "-f", "{{.State.ExitCode}}", id); st != "5" {
		t.Errorf("exit code after stop = %s, want 5 (the trap of the stop signal)", st)
	}

	// The CLI's signal proxy: Ctrl-C on an attached docker run reaches
	// the container through POST /kill.
	cmd := dockerCmd(t, d, "run", "--rm", ref, "sh", "-c", `trap "echo got INT; exit 9" INT; echo ready; while :; do sleep 0.1; done`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stdout)
	if line, err := br.ReadString('\n'); line != "ready\n" {
		t.Fatalf("%q %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGINT)
	// A lost signal leaves the CLI waiting for ever: it is killed after a
	// while, and the test fails instead of hanging.
	lost := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	rest, _ := io.ReadAll(br)
	err = cmd.Wait()
	if !lost.Stop() {
		t.Fatalf("SIGINT to docker run: the container did not end within 30 s (output %q)", rest)
	}
	var ee *exec.ExitError
	if string(rest) != "got INT\n" || !errors.As(err, &ee) || ee.ExitCode() != 9 {
		t.Errorf("after SIGINT: %q %v", rest, err)
	}
}
