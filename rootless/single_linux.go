package rootless

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/rootless-containers/rootlesskit/v3/pkg/api/router"
	"github.com/rootless-containers/rootlesskit/v3/pkg/messages"
	"github.com/rootless-containers/rootlesskit/v3/pkg/parent"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port"
	"github.com/rootless-containers/rootlesskit/v3/pkg/sigproxy"
	sigproxysignal "github.com/rootless-containers/rootlesskit/v3/pkg/sigproxy/signal"
)

// runSingleParent is rootlesskit's parent for hosts without newuidmap or
// subuid ranges. rootlesskit's own parent always calls newuidmap; here the
// kernel's unprivileged rule is enough: a process may map its own uid (and,
// with setgroups denied, its own gid) into a child namespace. Go writes
// those maps before the child execs, so the child starts with its
// capabilities and skips the id-map handshake; the rest of the protocol
// (network, ports, API socket) is rootlesskit's, spoken through its
// messages package.
func runSingleParent(ctx context.Context, opt parent.Opt, engine string) error {
	lock, err := parent.LockStateDir(opt.StateDir)
	if err != nil {
		return err
	}
	defer os.RemoveAll(opt.StateDir)
	defer lock.Unlock()

	toChildR, toChildW, err := os.Pipe()
	if err != nil {
		return err
	}
	fromChildR, fromChildW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(engine, os.Args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Pdeathsig:                  syscall.SIGKILL,
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{toChildR, fromChildW} // fds 3 and 4
	cmd.Env = append(os.Environ(),
		opt.PipeFDEnvKey+"=3,4",
		opt.ChildUseActivationEnvKey+"=false",
		opt.StateDirEnvKey+"="+opt.StateDir,
		opt.ParentEUIDEnvKey+"="+strconv.Itoa(os.Geteuid()),
		opt.ParentEGIDEnvKey+"="+strconv.Itoa(os.Getegid()),
	)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the namespace child: %w", err)
	}
	toChildR.Close()
	fromChildW.Close()
	if _, err := messages.WaitFor(fromChildR, messages.Name(messages.ChildInitUserNSCompleted{})); err != nil {
		return fmt.Errorf("namespace child: %w", err)
	}
	sigc := sigproxy.ForwardAllSignals(ctx, cmd.Process.Pid)
	defer sigproxysignal.StopCatch(sigc)

	netDone := &messages.ParentInitNetworkDriverCompleted{}
	if opt.NetworkDriver != nil {
		netns := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "root", filepath.Clean(opt.StateDir), "netns")
		msg, cleanup, err := opt.NetworkDriver.ConfigureNetwork(cmd.Process.Pid, opt.StateDir, netns)
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			return fmt.Errorf("network: %w", err)
		}
		netDone = msg
	}
	if err := messages.Send(toChildW, &messages.Message{U: messages.U{ParentInitNetworkDriverCompleted: netDone}}); err != nil {
		return err
	}

	portDone := &messages.ParentInitPortDriverCompleted{}
	portReady, portQuit, portErr := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	if opt.PortDriver != nil {
		portDone.PortDriverOpaque = opt.PortDriver.OpaqueForChild()
		cctx := &port.ChildContext{IP: net.ParseIP(netDone.IP).To4(), GatewayIP: net.ParseIP(netDone.Gateway).To4()}
		go func() { portErr <- opt.PortDriver.RunParentDriver(portReady, portQuit, cctx) }()
	}
	if err := os.WriteFile(filepath.Join(opt.StateDir, parent.StateFileChildPID), []byte(strconv.Itoa(cmd.Process.Pid)), 0o444); err != nil {
		return err
	}
	api, err := serveRootlesskitAPI(opt, cmd.Process.Pid)
	if err != nil {
		return err
	}
	defer api.Close()
	if err := messages.Send(toChildW, &messages.Message{U: messages.U{ParentInitPortDriverCompleted: portDone}}); err != nil {
		return err
	}
	toChildW.Close()
	if opt.PortDriver != nil {
		select {
		case <-portReady:
		case err := <-portErr:
			// An engine stopped right after it started ends the port
			// driver's hand-shake: its own exit says how it went.
			if werr := cmd.Wait(); werr != nil {
				return fmt.Errorf("child exited: %w", werr)
			}
			if engineGone(err) {
				return nil
			}
			return err
		}
	}
	waitErr := cmd.Wait()
	if opt.PortDriver != nil {
		portQuit <- struct{}{}
		if err := <-portErr; err != nil && waitErr == nil {
			waitErr = err
		}
	}
	if waitErr != nil {
		return fmt.Errorf("child exited: %w", waitErr)
	}
	return nil
}

// serveRootlesskitAPI serves rootlesskit's REST API (ports, info) on
// api.sock in the state dir, as rootlesskit's parent does: the engine adds
// published ports through it.
func serveRootlesskitAPI(opt parent.Opt, childPID int) (*http.Server, error) {
	mux := http.NewServeMux()
	router.AddRoutes(mux, &router.Backend{StateDir: opt.StateDir, ChildPID: childPID, NetworkDriver: opt.NetworkDriver, PortDriver: opt.PortDriver})
	p := filepath.Join(opt.StateDir, parent.StateFileAPISock)
	if err := os.RemoveAll(p); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", p)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: mux}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "rootlesskit api: %v\n", err)
		}
	}()
	return srv, nil
}
