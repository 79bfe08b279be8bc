package keeper

import (
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin/opaque"
)

// A keeper that is gone while the client asks is ErrKeeperGone, which
// tells the daemon to start a new one.
func TestEnterKeeperGone(t *testing.T) {
	dir := t.TempDir()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, SocketName), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	conn, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Enter(conn); !errors.Is(err, ErrKeeperGone) {
		t.Errorf("Enter on a closing keeper: %v, want ErrKeeperGone", err)
	}
}

// The command line carries the reply as JSON, the port driver's socket
// and ready pipe and its source-address choice; a port driver that
// names no socket is refused.
func TestCommand(t *testing.T) {
	o := Options{
		StateDir: "/run/x",
		Reply:    Reply{V: Version, PID: 7, Env: []string{"A=1"}},
		Parent:   6,
		NetNS:    "/run/x/netns",
		Port: map[string]string{
			opaque.SocketPath: "/s", opaque.ChildReadyPipePath: "/r",
			opaque.SourceIPTransparent: "true",
		},
		Debug: true,
	}
	args, err := Command("/bin/hutch-keeper", o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/hutch-keeper", "-s", "/run/x/keeper.sock", "-r", `{"v":1,"pid":7,"env":["A=1"]}`, "-P", "6",
		"-n", "/run/x/netns", "-p", "/s", "-y", "/r", "-t", "auto", "-d"}
	if !slices.Equal(args, want) {
		t.Errorf("Command:\n%q\nwant\n%q", args, want)
	}
	delete(o.Port, opaque.SocketPath)
	if _, err := Command("/bin/hutch-keeper", o); err == nil || !strings.Contains(err.Error(), "socket") {
		t.Errorf("a port driver without a socket: %v", err)
	}
}
