package shim_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

func TestRunExitAndLog(t *testing.T) {
	type line struct{ stream, log string }
	tests := []struct {
		name string
		args []string
		code int
		log  []line
	}{
		{"echo", []string{"echo", "hello"}, 0, []line{{"stdout", "hello\n"}}},
		{"exit code", []string{"sh", "-c", "exit 3"}, 3, nil},
		{"stderr apart", []string{"sh", "-c", "echo out; echo err >&2"}, 0, []line{{"stdout", "out\n"}, {"stderr", "err\n"}}},
		{"no trailing newline", []string{"sh", "-c", "printf abc"}, 0, []line{{"stdout", "abc"}}},
		{"exit 255", []string{"sh", "-c", "exit 255"}, 255, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			o := newOpts(t, testSpec(tc.args...))
			c, err := shim.Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.ExitCode != tc.code {
				t.Errorf("exit code %d, want %d", st.ExitCode, tc.code)
			}
			if st.FinishedAt.IsZero() || st.StartedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
				t.Errorf("times: started %v finished %v", st.StartedAt, st.FinishedAt)
			}
			got := logEntries(t, o.LogPath)
			var lines []line
			for _, e := range got {
				lines = append(lines, line{e.Stream, string(e.Line)})
				if e.Time.IsZero() {
					t.Errorf("entry without time: %+v", e)
				}
			}
			// stdout and stderr are separate pipes: order between them is
			// not defined, so compare as sets.
			if len(lines) != len(tc.log) {
				t.Fatalf("log %q, want %q", lines, tc.log)
			}
			for _, want := range tc.log {
				found := false
				for _, l := range lines {
					found = found || l == want
				}
				if !found {
					t.Errorf("log %q lacks %q", lines, want)
				}
			}
			fromFile, err := wire.ReadExit(o.ExitFile)
			if err != nil {
				t.Fatal(err)
			}
			if fromFile.ExitCode != tc.code {
				t.Errorf("exit file code %d, want %d", fromFile.ExitCode, tc.code)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		class error
		code  int
		msg   string
	}{
		{"missing executable", []string{"nosuch"}, errdefs.ErrInvalidArgument, 127, `exec: "nosuch": executable file not found in $PATH`},
		{"missing path", []string{"/bin/nosuch"}, errdefs.ErrInvalidArgument, 127, "no such file or directory"},
		{"not executable", []string{"/etc/passwd"}, errdefs.ErrInvalidArgument, 126, "permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			o := newOpts(t, testSpec(tc.args...))
			_, err := shim.Create(ctx, o)
			var se *wire.StartError
			if !errors.As(err, &se) {
				t.Fatalf("err %v (%T), want a *StartError", err, err)
			}
			if !errors.Is(err, tc.class) || se.ExitCode != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %q code %d, want class %v code %d containing %q", err, se.ExitCode, tc.class, tc.code, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "OCI runtime create failed: ") {
				t.Errorf("err %q lacks Docker's prefix", err)
			}
			// The shim is gone and left no exit status behind.
			if _, err := shim.Connect(ctx, o.SocketPath); !errors.Is(err, shim.ErrNoShim) {
				t.Errorf("connect after failed create: %v, want ErrNoShim", err)
			}
			if _, err := wire.ReadExit(o.ExitFile); !errdefs.IsNotFound(err) {
				t.Errorf("exit file after failed create: %v, want not found", err)
			}
		})
	}
}

func TestKill(t *testing.T) {
	tests := []struct {
		name string
		args []string
		sig  syscall.Signal
		code int
	}{
		{"sigkill", []string{"sleep", "100"}, syscall.SIGKILL, 137},
		// The init of a pid namespace only receives signals it handles
		// (SIGTERM to a plain `sleep` is ignored, in Docker too): a
		// trapping shell shows that the signal arrives.
		{"sigterm trapped", []string{"sh", "-c", `trap "exit 42" TERM; while :; do sleep 0.05; done`}, syscall.SIGTERM, 42},
		// The shell reports its child's death by SIGTERM as 143.
		{"sigterm relayed", []string{"sh", "-c", `trap "kill -TERM \$child; wait \$child; exit \$?" TERM; sleep 100 & child=$!; wait $child`}, syscall.SIGTERM, 143},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			o := newOpts(t, testSpec(tc.args...))
			c, err := shim.Start(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.State(ctx)
			if err != nil || st.Status != wire.StatusRunning || st.Pid != c.Pid() {
				t.Fatalf("state %+v, %v", st, err)
			}
			// Let the shell install its trap.
			time.Sleep(200 * time.Millisecond)
			if err := c.Kill(ctx, tc.sig); err != nil {
				t.Fatal(err)
			}
			exit, err := c.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if exit.ExitCode != tc.code {
				t.Errorf("exit code %d, want %d", exit.ExitCode, tc.code)
			}
			if err := c.Kill(ctx, tc.sig); !errors.Is(err, shim.ErrNoShim) && !errdefs.IsConflict(err) {
				t.Errorf("kill after exit: %v, want ErrNoShim or conflict", err)
			}
		})
	}
}

// Without a pid namespace (docker run --pid host) the command is no
// namespace's init, and SIGTERM kills it: the shim reports 128+15.
func TestKillHostPid(t *testing.T) {
	spec := testSpec("sleep", "100")
	var ns []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Type != specs.PIDNamespace {
			ns = append(ns, n)
		}
	}
	spec.Linux.Namespaces = ns
	// In a user namespace AdjustSpec binds the host's /proc: procfs can be
	// mounted only by the owner of the pid namespace.
	ctx := testCtx(t)
	c, err := shim.Start(ctx, newOpts(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exit, err := c.Wait(ctx); err != nil || exit.ExitCode != 143 {
		t.Errorf("wait: %+v %v; want 143", exit, err)
	}
}

func TestKillCreated(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("echo", "never"))
	c, err := shim.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx)
	if err != nil || st.Status != wire.StatusCreated {
		t.Fatalf("state %+v, %v; want created", st, err)
	}
	if err := c.Kill(ctx, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exit, err := c.Wait(ctx)
	if err != nil || exit.ExitCode != 137 {
		t.Fatalf("wait: %+v, %v; want 137", exit, err)
	}
	if len(logEntries(t, o.LogPath)) != 0 {
		t.Error("a container killed before start logged output")
	}
}

func TestStartTwice(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sleep", "100"))
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); !errdefs.IsConflict(err) {
		t.Errorf("second start: %v, want conflict", err)
	}
}

func TestAttach(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sh", "-c", "echo out; echo err >&2; echo more"))
	c, err := shim.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var out1, err1, out2 syncBuffer
	a1, err := c.Attach(ctx, shim.AttachOptions{Stdout: &out1, Stderr: &err1})
	if err != nil {
		t.Fatal(err)
	}
	// A second client that wants stdout only.
	a2, err := c.Attach(ctx, shim.AttachOptions{Stdout: &out2})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*shim.Attachment{a1, a2} {
		if err := a.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if out1.String() != "out\nmore\n" || err1.String() != "err\n" || out2.String() != "out\nmore\n" {
		t.Errorf("attach 1 stdout %q stderr %q, attach 2 stdout %q", out1.String(), err1.String(), out2.String())
	}
	if st, err := c.Wait(ctx); err != nil || st.ExitCode != 0 {
		t.Errorf("wait %+v %v", st, err)
	}
}

func TestAttachStdin(t *testing.T) {
	tests := []struct {
		name      string
		stdinOnce bool
		input     string
	}{
		{"stdin once: EOF ends cat", true, "piped\nline two\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			o := newOpts(t, testSpec("cat"))
			o.OpenStdin, o.StdinOnce = true, tc.stdinOnce
			c, err := shim.Create(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			var out syncBuffer
			a, err := c.Attach(ctx, shim.AttachOptions{Stdin: strings.NewReader(tc.input), Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := a.Wait(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.input {
				t.Errorf("stdout %q, want %q", out.String(), tc.input)
			}
			if st, err := c.Wait(ctx); err != nil || st.ExitCode != 0 {
				t.Errorf("wait %+v %v", st, err)
			}
		})
	}
}

// Without StdinOnce the container's stdin stays open when an attached
// client leaves; a later client can still write to it.
func TestStdinStaysOpen(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sh", "-c", "read a; read b; echo got $a $b"))
	o.OpenStdin = true
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	a1, err := c.Attach(ctx, shim.AttachOptions{Stdin: strings.NewReader("one\n")})
	if err != nil {
		t.Fatal(err)
	}
	// a1's stdin ends (EOF) without closing the container's.
	time.Sleep(100 * time.Millisecond)
	_ = a1.Close()
	var out syncBuffer
	a2, err := c.Attach(ctx, shim.AttachOptions{Stdin: strings.NewReader("two\n"), Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := a2.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "got one two\n" {
		t.Errorf("stdout %q", out.String())
	}
}

func TestTty(t *testing.T) {
	ctx := testCtx(t)
	spec := testSpec("sh", "-c", "tty; stty size; read x; stty size")
	spec.Process.Terminal = true
	o := newOpts(t, spec)
	o.Tty, o.OpenStdin, o.StdinOnce = true, true, true
	o.ConsoleHeight, o.ConsoleWidth = 24, 80
	c, err := shim.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	var out syncBuffer
	a, err := c.Attach(ctx, shim.AttachOptions{Stdin: stdinR, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, func() bool { return contains(out.String(), "24 80") }); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if err := c.Resize(ctx, 40, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := stdinW.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	_ = stdinW.Close()
	// A tty turns "\n" into "\r\n", as Docker's raw stream shows it.
	want := "/dev/pts/0\r\n24 80\r\n"
	if got := out.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "40 100\r\n") {
		t.Errorf("tty output %q, want %q... 40 100", got, want)
	}
	if st, err := c.Wait(ctx); err != nil || st.ExitCode != 0 {
		t.Errorf("wait %+v %v", st, err)
	}
	for _, e := range logEntries(t, o.LogPath) {
		if e.Stream != "stdout" {
			t.Errorf("tty log entry on %s", e.Stream)
		}
	}
}

func TestResizeWithoutTty(t *testing.T) {
	ctx := testCtx(t)
	c, err := shim.Start(ctx, newOpts(t, testSpec("sleep", "100")))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Resize(ctx, 10, 10); !errdefs.IsFailedPrecondition(err) {
		t.Errorf("resize without tty: %v, want failed precondition", err)
	}
}

func TestConnectAndReconcile(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sh", "-c", "read x; exit 7"))
	o.OpenStdin = true
	if _, err := shim.Start(ctx, o); err != nil {
		t.Fatal(err)
	}
	// As an engine that restarted: only the socket path is known.
	c, err := shim.Connect(ctx, o.SocketPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx)
	if err != nil || st.Status != wire.StatusRunning || st.ExitFile != o.ExitFile || st.ShimPid == 0 {
		t.Fatalf("state %+v %v", st, err)
	}
	a, err := c.Attach(ctx, shim.AttachOptions{Stdin: strings.NewReader("\n")})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	// The shim exits soon after the container.
	if err := waitFor(ctx, func() bool {
		_, err := os.Stat(o.SocketPath)
		return os.IsNotExist(err)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := shim.Connect(ctx, o.SocketPath); !errors.Is(err, shim.ErrNoShim) || !errdefs.IsUnavailable(err) {
		t.Errorf("connect to a gone shim: %v", err)
	}
	// Wait after the shim is gone answers from the exit file.
	exit, err := c.Wait(ctx)
	if err != nil || exit.ExitCode != 7 {
		t.Errorf("wait after shim exit: %+v %v", exit, err)
	}
	if exit, err := wire.ReadExit(o.ExitFile); err != nil || exit.ExitCode != 7 {
		t.Errorf("ReadExit: %+v %v", exit, err)
	}
}

func TestExec(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sleep", "100"))
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	proc := func(args ...string) specs.Process {
		p := *testSpec().Process
		p.Args = args
		return p
	}
	tests := []struct {
		name      string
		args      []string
		stdin     string
		tty       bool
		code      int
		out, serr string
	}{
		{"echo", []string{"echo", "hi"}, "", false, 0, "hi\n", ""},
		{"exit code", []string{"sh", "-c", "echo e >&2; exit 5"}, "", false, 5, "", "e\n"},
		{"stdin", []string{"cat"}, "in\n", false, 0, "in\n", ""},
		{"tty", []string{"tty"}, "", true, 0, "/dev/pts/0\r\n", ""},
		{"same pid namespace", []string{"sh", "-c", "kill -0 1 && echo pid1"}, "", false, 0, "pid1\n", ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := proc(tc.args...)
			p.Terminal = tc.tty
			var out, serr syncBuffer
			opts := shim.ExecOptions{ID: "e" + string(rune('a'+i)), Process: p, Stdout: &out, Stderr: &serr}
			if tc.stdin != "" {
				opts.Stdin = strings.NewReader(tc.stdin)
			}
			var pid int
			opts.Started = func(p int) { pid = p }
			exit, err := c.Exec(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if exit.ExitCode != tc.code || out.String() != tc.out || serr.String() != tc.serr || pid == 0 {
				t.Errorf("exit %d stdout %q stderr %q pid %d; want %d %q %q", exit.ExitCode, out.String(), serr.String(), pid, tc.code, tc.out, tc.serr)
			}
			st, err := c.ExecState(ctx, opts.ID)
			if err != nil || st.Running || st.ExitCode != tc.code || st.Pid != pid {
				t.Errorf("exec state %+v %v", st, err)
			}
		})
	}
	t.Run("missing executable", func(t *testing.T) {
		_, err := c.Exec(ctx, shim.ExecOptions{ID: "missing", Process: proc("nosuch")})
		var se *wire.StartError
		if !errors.As(err, &se) || se.ExitCode != 127 || !errdefs.IsInvalidArgument(err) {
			t.Errorf("exec nosuch: %v", err)
		}
	})
	t.Run("detached", func(t *testing.T) {
		if _, err := c.Exec(ctx, shim.ExecOptions{ID: "bg", Process: proc("sh", "-c", "exit 4"), Detach: true}); err != nil {
			t.Fatal(err)
		}
		if st, err := c.WaitExec(ctx, "bg"); err != nil || st.Running || st.ExitCode != 4 {
			t.Errorf("wait for the detached exec: %+v %v", st, err)
		}
		if st, err := c.ExecState(ctx, "bg"); err != nil || st.Running || st.ExitCode != 4 {
			t.Errorf("detached exec state %+v %v", st, err)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		if _, err := c.ExecState(ctx, "nope"); !errdefs.IsNotFound(err) {
			t.Errorf("exec state of unknown id: %v", err)
		}
		if _, err := c.WaitExec(ctx, "nope"); !errdefs.IsNotFound(err) {
			t.Errorf("wait for an unknown exec: %v", err)
		}
	})
	t.Run("duplicate id", func(t *testing.T) {
		if _, err := c.Exec(ctx, shim.ExecOptions{ID: "bg", Process: proc("true")}); !errdefs.IsAlreadyExists(err) {
			t.Errorf("duplicate exec id: %v", err)
		}
	})
}

// An ended exec leaves nothing open in the shim: a health check execs
// every few seconds for as long as its container runs.
func TestExecsLeaveNoFiles(t *testing.T) {
	ctx := testCtx(t)
	c, err := shim.Start(ctx, newOpts(t, testSpec("sleep", "100")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill(ctx, syscall.SIGKILL)
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", st.ShimPid))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	exec := func(i int, tty bool) {
		p := *testSpec("sh", "-c", "echo out; echo err >&2").Process
		p.Terminal = tty
		var out, serr syncBuffer
		exit, err := c.Exec(ctx, shim.ExecOptions{ID: fmt.Sprintf("x%d", i), Process: p, Stdout: &out, Stderr: &serr})
		if err != nil || exit.ExitCode != 0 || !strings.Contains(out.String(), "out") {
			t.Fatalf("exec %d: %+v %v, stdout %q", i, exit, err, out.String())
		}
	}
	exec(0, false) // the shim's first exec opens what it keeps (its runtime's socket)
	before := fds()
	for i := 1; i <= 10; i++ {
		exec(i, i%2 == 0)
	}
	if after := fds(); after > before {
		t.Errorf("the shim has %d open files after 10 more execs, %d before", after, before)
	}
}

func TestExecNotRunning(t *testing.T) {
	ctx := testCtx(t)
	c, err := shim.Create(ctx, newOpts(t, testSpec("sleep", "100")))
	if err != nil {
		t.Fatal(err)
	}
	p := *testSpec("true").Process
	if _, err := c.Exec(ctx, shim.ExecOptions{ID: "x", Process: p}); !errdefs.IsConflict(err) {
		t.Errorf("exec in a created container: %v, want conflict", err)
	}
}

// The engine's logs -f: follow the file while the container writes, stop
// once the container has exited.
func TestFollowLiveLog(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.1; done"))
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_, _ = c.Wait(context.Background())
		close(done)
	}()
	var got []string
	err = jsonlog.Read(ctx, o.LogPath, jsonlog.ReadOptions{Tail: -1, Follow: true, Done: done}, func(e jsonlog.Entry) error {
		got = append(got, string(e.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "") != "line1\nline2\nline3\n" {
		t.Errorf("followed %q", got)
	}
}

// docs/design.md, Platform constraints: libcontainer re-executes the shim as the container's init
// from a sealed clone of the binary. With the state root not nested with
// the binary's directory it uses a zero-copy overlayfs, not a memfd copy
// of the whole binary on every start.
func TestExesealOverlay(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("true"))
	o.Debug = true
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(o.BundleDir + "/shim.log")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "using overlayfs for sealed /proc/self/exe") {
		t.Errorf("shim.log does not show the overlayfs seal:\n%s", b)
	}
	if testing.Verbose() {
		t.Logf("shim.log:\n%s", b)
	}
}

// After kill -9 of a shim, its container runs on unattended: Connect says
// ErrNoShim, no exit file exists, and Delete kills and removes it.
func TestShimKilled(t *testing.T) {
	ctx := testCtx(t)
	o := newOpts(t, testSpec("sleep", "100"))
	c, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.ShimPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, func() bool {
		_, err := shim.Connect(ctx, o.SocketPath)
		return errors.Is(err, shim.ErrNoShim)
	}); err != nil {
		t.Fatal("shim still answers after kill -9")
	}
	if _, err := c.Wait(ctx); !errors.Is(err, shim.ErrNoShim) {
		t.Errorf("wait on a killed shim: %v, want ErrNoShim", err)
	}
	if err := syscall.Kill(st.Pid, 0); err != nil {
		t.Fatalf("the container died with its shim: %v", err)
	}
	if err := shim.Delete(ctx, o.RuntimeBinary, o.BundleDir); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, func() bool { return !processAlive(st.Pid) }); err != nil {
		t.Error("container process survived Delete")
	}
	if err := shim.Delete(ctx, o.RuntimeBinary, o.BundleDir); err != nil {
		t.Errorf("second delete: %v", err)
	}
	// The same id can run again.
	c2, err := shim.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	_ = c2.Kill(ctx, syscall.SIGKILL)
	if exit, err := c2.Wait(ctx); err != nil || exit.ExitCode != 137 {
		t.Errorf("rerun: %+v %v", exit, err)
	}
}

// processAlive: a zombie waiting for its new parent to reap it counts as
// dead.
func processAlive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads the state and parent of pid from /proc.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces, so cut at the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}
