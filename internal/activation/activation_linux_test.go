package activation

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The child half of TestTake: it runs with fd 3 and LISTEN_* set as
// systemd sets them, and prints what it found.
func TestMain(m *testing.M) {
	if mode := os.Getenv("ACTIVATION_TEST_CHILD"); mode != "" {
		fmt.Print(child(mode))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func child(mode string) string {
	f, err := Take()
	if os.Getenv("LISTEN_FDS") != "" || os.Getenv("LISTEN_PID") != "" {
		return "LISTEN_* left in the environment"
	}
	switch {
	case errors.Is(err, ErrSocket):
		return "refused: " + err.Error()
	case err != nil:
		return "error: " + err.Error()
	case f == nil:
		return "none"
	}
	if flags, _ := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
		return "not close-on-exec"
	}
	if err := Pass(f); err != nil {
		return "pass: " + err.Error()
	}
	f.Close()
	g, err := Inherited()
	if err != nil || g == nil {
		return fmt.Sprintf("inherited: %v %v", g, err)
	}
	if g.Fd() < passFDMin {
		return fmt.Sprintf("passed at fd %d", g.Fd())
	}
	path, err := Path(g)
	if err != nil {
		return "path: " + err.Error()
	}
	l, err := net.FileListener(g)
	if err != nil {
		return "listener: " + err.Error()
	}
	c, err := l.Accept()
	if err != nil {
		return "accept: " + err.Error()
	}
	c.Write([]byte("hello"))
	c.Close()
	return "ok " + path
}

// runChild starts this test binary as systemd starts a service: fd 3 is
// extra, LISTEN_PID is the child's own pid (sh execs it), unless pid says
// otherwise.
func runChild(t *testing.T, extra *os.File, fds, pid string) string {
	t.Helper()
	if pid == "" {
		pid = "$$"
	}
	cmd := exec.Command("sh", "-c", "LISTEN_PID="+pid+" LISTEN_FDS="+fds+" LISTEN_FDNAMES=hutch.socket exec \"$0\"", os.Args[0])
	cmd.Env = append(os.Environ(), "ACTIVATION_TEST_CHILD=1")
	cmd.ExtraFiles = []*os.File{extra}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return string(out)
}

func TestTake(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hutch.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lf, err := l.(*net.UnixListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	got := make(chan string, 1)
	go func() {
		c, err := net.Dial("unix", sock)
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b := make([]byte, 5)
		_, err = c.Read(b)
		got <- fmt.Sprint(string(b), err)
	}()
	if out := runChild(t, lf, "1", ""); out != "ok "+sock {
		t.Fatalf("socket from systemd: %q, want ok %s", out, sock)
	}
	if g := <-got; g != "hello<nil>" {
		t.Errorf("the client got %q from the child's listener", g)
	}

	// LISTEN_PID of another process: the socket is not this one's.
	if out := runChild(t, lf, "1", "1"); out != "none" {
		t.Errorf("LISTEN_PID of another process: %q, want none", out)
	}
	// Two sockets, or a descriptor that is no listening unix socket.
	if out := runChild(t, lf, "2", ""); !strings.HasPrefix(out, "refused: ") || !strings.Contains(out, "serves one") {
		t.Errorf("two sockets: %q, want refused", out)
	}
	regular, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	if out := runChild(t, regular, "1", ""); !strings.HasPrefix(out, "refused: ") {
		t.Errorf("a regular file: %q, want refused", out)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cf, err := conn.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	if out := runChild(t, cf, "1", ""); !strings.HasPrefix(out, "refused: ") {
		t.Errorf("a connected socket: %q, want refused", out)
	}
}

func TestInheritedRefusesJunk(t *testing.T) {
	t.Setenv(envFD, "3")
	if _, err := Inherited(); !errors.Is(err, ErrSocket) {
		t.Errorf("a low descriptor: %v, want ErrSocket", err)
	}
	t.Setenv(envFD, "")
	if f, err := Inherited(); f != nil || err != nil {
		t.Errorf("nothing passed: %v %v", f, err)
	}
}
