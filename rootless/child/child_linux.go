package child

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/hutch-engine/hutch/rootless"
	"github.com/rootless-containers/rootlesskit/v3/pkg/copyup/tmpfssymlink"
	"github.com/rootless-containers/rootlesskit/v3/pkg/messages"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin"
	"golang.org/x/sys/unix"
)

// envReexec counts the re-executions that gain the capabilities, and
// envParentPID remembers the parent across them.
const (
	envReexec    = "_HUTCH_CHILD_REEXEC"
	envParentPID = "_HUTCH_CHILD_PARENT_PID"
)

// Setup finishes the namespaces when this process is the namespace child
// and returns; in every other role it returns at once. The first run of a
// child under the full id mapping does not return: after the parent has
// written the maps it re-executes itself to gain its capabilities. With a
// detached network namespace, the builtin port driver's child side then
// runs in a goroutine for the life of the process.
func Setup() error {
	ns, err := Prepare()
	if err != nil || ns == nil || ns.NetNS == "" {
		return err
	}
	// The port driver's child side lives as long as the process: the
	// parent removes its socket with the state dir.
	pd := builtin.NewChildDriver(debugWriter{"port"})
	go func() {
		if err := pd.RunChildDriver(ns.Port, nil, ns.NetNS); err != nil {
			slog.Error("port driver stopped: published ports no longer work", "err", err)
		}
	}()
	return nil
}

// Namespaces is what Prepare leaves for the port driver's child side.
type Namespaces struct {
	// NetNS is the detached network namespace's bind mount, "" when the
	// parent serves none.
	NetNS string
	// Port is the builtin port driver's word to its child side
	// (PortDriverOpaque).
	Port map[string]string
}

// Prepare is Setup without the port driver's child side, for a process
// that serves it otherwise (the live-restore keeper execs hutch-keeper,
// which does). It returns nil in any role but the namespace child.
func Prepare() (*Namespaces, error) {
	if rootless.CurrentRole() != rootless.Child {
		return nil, nil
	}
	var rfd, wfd int
	if _, err := fmt.Sscanf(os.Getenv(rootless.EnvPipeFD), "%d,%d", &rfd, &wfd); err != nil {
		return nil, fmt.Errorf("%s: %w", rootless.EnvPipeFD, err)
	}
	fromParent, toParent := os.NewFile(uintptr(rfd), "parent-to-child"), os.NewFile(uintptr(wfd), "child-to-parent")
	if os.Getenv(envParentPID) == "" {
		os.Setenv(envParentPID, strconv.Itoa(os.Getppid()))
	}
	caps, err := hasCaps()
	if err != nil {
		return nil, err
	}
	if !caps {
		return nil, gainCaps(fromParent, toParent)
	}
	if err := dieWithParent(); err != nil {
		return nil, err
	}
	stateDir := rootless.StateDir()
	netns := ""
	if rootless.Network() {
		netns = filepath.Join(stateDir, "netns")
		if err := newDetachedNetNS(netns); err != nil {
			return nil, fmt.Errorf("detached network namespace %s: %w", netns, err)
		}
	}
	done := &messages.Message{U: messages.U{ChildInitUserNSCompleted: &messages.ChildInitUserNSCompleted{}}}
	if err := messages.Send(toParent, done); err != nil {
		return nil, err
	}
	msg, err := messages.WaitFor(fromParent, messages.Name(messages.ParentInitNetworkDriverCompleted{}))
	if err != nil {
		return nil, err
	}
	netMsg := msg.U.ParentInitNetworkDriverCompleted
	msg, err = messages.WaitFor(fromParent, messages.Name(messages.ParentInitPortDriverCompleted{}))
	if err != nil {
		return nil, err
	}
	portMsg := msg.U.ParentInitPortDriverCompleted
	fromParent.Close()
	toParent.Close()
	for _, k := range []string{rootless.EnvPipeFD, envReexec, envParentPID} {
		os.Unsetenv(k)
	}

	// The host's / is private on many machines; rslave is refused there.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("making / private: %w", err)
	}
	if _, err := tmpfssymlink.NewChildDriver().CopyUp([]string{"/etc", "/run"}); err != nil {
		return nil, fmt.Errorf("copy-up: %w", err)
	}
	if netns == "" {
		return &Namespaces{}, nil
	}
	if err := configureNetwork(netns, netMsg); err != nil {
		return nil, fmt.Errorf("network in %s: %w", netns, err)
	}
	return &Namespaces{NetNS: netns, Port: portMsg.PortDriverOpaque}, nil
}

// gainCaps answers the parent's hello, waits until it has written the id
// maps with newuidmap/newgidmap, and re-executes this binary: only an exec
// as uid 0 of the namespace gives the capabilities.
func gainCaps(fromParent, toParent *os.File) error {
	if _, err := messages.WaitFor(fromParent, messages.Name(messages.ParentHello{})); err != nil {
		return err
	}
	if err := messages.Send(toParent, &messages.Message{U: messages.U{ChildHello: &messages.ChildHello{}}}); err != nil {
		return err
	}
	if _, err := messages.WaitFor(fromParent, messages.Name(messages.ParentInitIdmapCompleted{})); err != nil {
		return err
	}
	n, _ := strconv.Atoi(os.Getenv(envReexec))
	if n > 0 {
		return errors.New("no capabilities in the user namespace after the id maps were written")
	}
	os.Setenv(envReexec, strconv.Itoa(n+1))
	// By path, not /proc/self/exe: the engine shows as "hutch" in ps.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	err = syscall.Exec(exe, os.Args, os.Environ())
	// The pipes' Files must not be collected before the exec (a GC while
	// newuidmap runs): their finalizers would close the descriptors the
	// next run speaks on.
	runtime.KeepAlive(fromParent)
	runtime.KeepAlive(toParent)
	return fmt.Errorf("re-executing to gain the capabilities: %w", err)
}

// hasCaps reports whether this process has effective capabilities.
func hasCaps() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	return data[0].Effective != 0, nil
}

// dieWithParent asks for SIGKILL when the parent dies. The exec that
// gained the capabilities cleared the parent-death signal the parent had
// set; a parent that died before this call left the process to init.
func dieWithParent() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	if strconv.Itoa(os.Getppid()) != os.Getenv(envParentPID) {
		return errors.New("the namespace parent is gone")
	}
	return nil
}

// newDetachedNetNS creates a network namespace that no process lives in:
// a throw-away thread unshares it and bind-mounts it at path.
func newDetachedNetNS(path string) error {
	if err := os.WriteFile(path, nil, 0o400); err != nil {
		return err
	}
	return onThrowawayThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		return unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "", unix.MS_BIND, "")
	})
}

// onThrowawayThread runs fn on an OS thread of its own that ends with it
// (a locked goroutine that returns takes its thread along). fn may leave
// the thread in another network namespace: a thread that entered the
// detached namespace can never go back to the host's, which belongs to
// the initial user namespace.
func onThrowawayThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread never ends, and /proc shows its namespaces
			// as the process's: hold it while another thread runs fn.
			errc <- onThrowawayThread(fn)
			runtime.UnlockOSThread()
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// debugWriter turns the output of rootlesskit's drivers into debug logs
// of the default logger, which the engine sets up after Setup.
type debugWriter struct{ component string }

func (w debugWriter) Write(p []byte) (int, error) {
	slog.Debug(strings.TrimRight(string(p), "\n"), "component", w.component)
	return len(p), nil
}
