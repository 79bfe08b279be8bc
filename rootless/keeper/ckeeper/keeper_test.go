package ckeeper

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hutch-engine/hutch/rootless/keeper"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin/msg"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin/opaque"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds hutch-keeper as the Makefile does (unstripped).
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hutch-keeper-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hutch-keeper")
		// The compiler the Makefile picks: musl's where it is installed.
		cc := os.Getenv("KEEPER_CC")
		if cc == "" {
			cc = "cc"
			if p, err := exec.LookPath("musl-gcc"); err == nil {
				cc = p
			}
		}
		out, err := exec.Command(cc, "-static", "-Os", "-Wall", "-Wextra", "-Werror", "-DHUTCH_KEEPER_MAIN", "-o", binPath, "keeper.c", "port.c", "util.c", "msg.c").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%s -static (a static libc: Debian's musl-tools or libc6-dev): %v\n%s", cc, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// start runs hutch-keeper with o (as this process's child), in a user
// namespace of its own when userns is set: nothing else lives there, so
// it exits once its lease is back.
func start(t *testing.T, o keeper.Options, userns bool) (*exec.Cmd, <-chan error) {
	t.Helper()
	o.Parent = os.Getpid()
	o.Debug = true
	if o.Poll == 0 {
		o.Poll = 20 * time.Millisecond
	}
	args, err := keeper.Command(binary(t), o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	// Its log (debug) shows when the test fails.
	logf, err := os.Create(filepath.Join(t.TempDir(), "keeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if userns {
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, exited := make(chan error, 1), make(chan struct{})
	go func() {
		done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("hutch-keeper's log:\n%s", b)
		}
		logf.Close()
	})
	return cmd, done
}

func dialRetry(t *testing.T, dir string) *net.UnixConn {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := keeper.Dial(dir)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// waitExit fails the test unless the keeper exits with status 0.
func waitExit(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the keeper exited: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the keeper did not exit with no lease out and nothing in its namespace")
	}
}

// running reports, after a moment, whether the keeper still runs.
func running(done <-chan error) bool {
	select {
	case <-done:
		return false
	case <-time.After(300 * time.Millisecond):
		return true
	}
}

// A lease carries the keeper's namespaces and the reply it was started
// with; the keeper serves the next client only once the lease is back,
// and exits when nothing is left to keep, removing its socket.
func TestKeeperLeases(t *testing.T) {
	dir := t.TempDir()
	reply := keeper.Reply{V: keeper.Version, PID: 4242, Env: []string{"A=1", `B="x\y"`}}
	cmd, done := start(t, keeper.Options{StateDir: dir, Reply: reply}, true)
	l, err := keeper.Enter(dialRetry(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if l.PID != reply.PID || strings.Join(l.Env, " ") != strings.Join(reply.Env, " ") {
		t.Errorf("reply %+v, want %+v", l.Reply, reply)
	}
	for f, ns := range map[*os.File]string{l.UserNS: "user", l.MountNS: "mnt"} {
		got, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		want, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", cmd.Process.Pid, ns))
		if got == "" || got != want {
			t.Errorf("%s namespace descriptor is %q, want the keeper's %q", ns, got, want)
		}
	}
	if self, _ := os.Readlink("/proc/self/ns/user"); self == "" || self == mustReadlink(t, "/proc/self/fd/"+strconv.Itoa(int(l.UserNS.Fd()))) {
		t.Errorf("the keeper's user namespace is this process's (%s): the test set up none", self)
	}

	// A second client waits while the lease is out.
	second := make(chan *keeper.Lease, 1)
	go func() {
		l2, err := keeper.Enter(dialRetry(t, dir))
		if err != nil {
			t.Error(err)
		}
		second <- l2
	}()
	select {
	case <-second:
		t.Fatal("a second lease was given while the first was out")
	case <-time.After(300 * time.Millisecond):
	}
	l.Close()
	l2 := <-second
	if l2 == nil {
		t.FailNow()
	}
	if !running(done) {
		t.Fatal("the keeper exited with a lease out")
	}
	l2.Close()
	waitExit(t, done)
	if _, err := os.Stat(filepath.Join(dir, keeper.SocketName)); !os.IsNotExist(err) {
		t.Errorf("the socket after the keeper exited: %v", err)
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	s, err := os.Readlink(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ask sends one request line and reads the answer: the descriptors that
// came with its first byte, and the reply.
func ask(t *testing.T, dir, line string) (int, keeper.Reply) {
	t.Helper()
	c := dialRetry(t, dir)
	defer c.Close()
	if _, err := c.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	oob := make([]byte, syscall.CmsgSpace(8))
	_, oobn, _, _, err := c.ReadMsgUnix(make([]byte, 1), oob)
	if err != nil {
		t.Fatal(err)
	}
	var r keeper.Reply
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return oobn, r
}

// A request of another version, of an unknown op or that is no JSON is
// refused with a reply that says why, without descriptors and without a
// lease: a good request gets one after them.
func TestKeeperRefuses(t *testing.T) {
	dir := t.TempDir()
	_, done := start(t, keeper.Options{StateDir: dir, Reply: keeper.Reply{V: keeper.Version, PID: 1}}, true)
	for line, want := range map[string]string{
		`{"v":2,"op":"enter"}` + "\n":                             fmt.Sprintf("the keeper speaks version %d, the daemon version 2: stop the running containers", keeper.Version),
		fmt.Sprintf(`{"v":%d,"op":"dance"}`+"\n", keeper.Version): `unknown op "dance"`,
		"hello\n": "reading the request: ",
	} {
		oobn, r := ask(t, dir, line)
		if oobn != 0 || r.V != keeper.Version || !strings.Contains(r.Err, want) {
			t.Errorf("%q: %d bytes of descriptors, reply %+v; want an error with %q", line, oobn, r, want)
		}
	}
	// The refused clients took no lease, and the keeper waits for the
	// daemon that started it.
	if !running(done) {
		t.Fatal("the keeper exited before its first lease")
	}
	l, err := keeper.Enter(dialRetry(t, dir))
	if err != nil {
		t.Fatalf("a request of this version after refusals: %v", err)
	}
	l.Close()
	waitExit(t, done)
}

// A process in the keeper's user namespace that is neither the keeper's
// nor a sibling (a container's shim, once the engine is gone) keeps the
// keeper; it exits once that process is gone.
func TestKeeperStaysWhileOccupied(t *testing.T) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Fatalf("nsenter (util-linux): %v", err)
	}
	dir := t.TempDir()
	cmd, done := start(t, keeper.Options{StateDir: dir, Reply: keeper.Reply{V: keeper.Version, PID: 1}}, true)
	l, err := keeper.Enter(dialRetry(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	// The shell exits at once: the sleep it leaves is nobody's child here.
	out, err := exec.Command("sh", "-c", `"$0" --user --preserve-credentials -t "$1" sleep 600 >/dev/null 2>&1 & echo $!`,
		nsenter, strconv.Itoa(cmd.Process.Pid)).Output()
	if err != nil {
		t.Fatal(err)
	}
	occupant, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(occupant, syscall.SIGKILL)
	want := mustReadlink(t, fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", occupant)); ns == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the occupant never entered the keeper's user namespace")
		}
	}
	l.Close()
	if !running(done) {
		t.Fatal("the keeper exited while a process lived in its user namespace")
	}
	syscall.Kill(occupant, syscall.SIGKILL)
	waitExit(t, done)
}

// A keeper whose parent is not the one named exits at once: the
// namespaces' parent is gone.
func TestKeeperParentGone(t *testing.T) {
	args, err := keeper.Command(binary(t), keeper.Options{StateDir: t.TempDir(), Reply: keeper.Reply{V: 1}, Parent: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "the namespace parent is gone") {
		t.Errorf("exit %v, output %q", err, out)
	}
}

// portDriver starts hutch-keeper with the builtin port driver's child
// side in this process's network namespace and does the parent's
// hand-shake; it returns the driver's socket and the init reply.
func portDriver(t *testing.T) (string, *msg.Reply) {
	t.Helper()
	dir := t.TempDir()
	sock, ready := filepath.Join(dir, ".bp.sock"), filepath.Join(dir, ".bp-ready.pipe")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, keeper.Options{
		StateDir: dir, Reply: keeper.Reply{V: keeper.Version, PID: 1},
		NetNS: fmt.Sprintf("/proc/%d/ns/net", os.Getpid()),
		Port:  map[string]string{opaque.SocketPath: sock, opaque.ChildReadyPipePath: ready},
	}, false)
	r, err := os.OpenFile(ready, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := msg.Initiate(c.(*net.UnixConn))
	if err != nil {
		t.Fatal(err)
	}
	return sock, rep
}

// The port driver's child side answers rootlesskit's parent: the init
// hand-shake, then, per connection, a socket dialed to the target (TCP
// and UDP), or an error when nothing listens there or the protocol is
// unknown.
func TestKeeperPortDriver(t *testing.T) {
	sock, rep := portDriver(t)
	if rep.Error != "" || rep.SourceIPTransparentBackend != "" {
		t.Errorf("init reply %+v", rep)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 4)
				if _, err := io.ReadFull(c, b); err == nil {
					c.Write(append([]byte("re:"), b...))
				}
			}()
		}
	}()
	tcpPort := l.Addr().(*net.TCPAddr).Port
	for _, spec := range []port.Spec{
		{Proto: "tcp", ChildPort: tcpPort},
		{Proto: "tcp4", ChildIP: "127.0.0.1", ChildPort: tcpPort},
		{Proto: "tcp", ParentIP: "127.0.0.1", ChildPort: tcpPort},
	} {
		// A loopback client's address goes along; it is dialed from
		// the keeper's own.
		src := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
		fd, err := msg.ConnectToChildWithSocketPath(sock, spec, src)
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		f := os.NewFile(uintptr(fd), "target")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("ping"))
		b := make([]byte, 7)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "re:ping" {
			t.Errorf("%+v: the target answered %q, %v", spec, b, err)
		}
		c.Close()
	}

	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	fd, err := msg.ConnectToChildWithSocketPath(sock, port.Spec{Proto: "udp", ChildPort: u.LocalAddr().(*net.UDPAddr).Port}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "udp-target")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("dgram"))
	b := make([]byte, 16)
	u.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, from, err := u.ReadFrom(b)
	if err != nil || string(b[:n]) != "dgram" || from.String() != c.LocalAddr().String() {
		t.Errorf("the UDP target read %q from %v (%v), want dgram from %v", b[:n], from, err, c.LocalAddr())
	}

	// Nothing listens: the parent gets no descriptor.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l2.Addr().(*net.TCPAddr).Port
	l2.Close()
	if _, err := msg.ConnectToChildWithSocketPath(sock, port.Spec{Proto: "tcp", ChildPort: closed}, nil); err == nil {
		t.Error("a connection to a closed port was passed back")
	}
	if _, err := msg.ConnectToChildWithSocketPath(sock, port.Spec{Proto: "sctp", ChildPort: tcpPort}, nil); err == nil {
		t.Error("an unknown protocol was dialed")
	}
	// A malformed request gets an error reply, and the driver goes on.
	raw, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte{5, 0, 0, 0, '{', '"', 'x', '"', '}'})
	raw.(*net.UnixConn).CloseWrite()
	var bad msg.Reply
	if body, err := io.ReadAll(raw); err != nil || len(body) < 4 || json.Unmarshal(body[4:], &bad) != nil || bad.Error == "" {
		t.Errorf("reply to a malformed request: %q, %v", body, err)
	}
	raw.Close()
	if _, err := msg.ConnectToChildWithSocketPath(sock, port.Spec{Proto: "tcp", ChildPort: tcpPort}, nil); err != nil {
		t.Errorf("after a malformed request: %v", err)
	}
}
