// Package install sets hutch up as a service of the user's systemd (a
// socket unit that starts the daemon at the first connection, and the
// daemon's service unit) and as a docker CLI context, and takes both away
// again: `hutch install` and `hutch uninstall`. Real root gets system
// units instead. Without a systemd manager to talk to it says so and
// tells the manual way.
package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Options are what `hutch install` and `hutch uninstall` were asked.
type Options struct {
	// Binary is the hutch binary the service runs.
	Binary string
	// Socket is the daemon's socket path (config.Resolve).
	Socket string
	// RuntimeDir is $XDG_RUNTIME_DIR, "" when unset: the user manager's
	// %t, where the socket unit listens when Socket is the default.
	RuntimeDir string
	// IdleExit is the service's --idle-exit (0: stays up).
	IdleExit time.Duration
	// Use makes the hutch context the docker CLI's current one.
	Use bool
	// Purge (uninstall) removes DataRoot and StateDir too.
	Purge              bool
	DataRoot, StateDir string
	// System is true for real root: system units, systemctl without --user.
	System bool
	Out    io.Writer
}

// scope is the systemd manager the units go to.
type scope struct {
	unitDir string
	args    []string // before systemctl's verb: --user, or none
	system  bool
}

func scopeOf(o Options) (scope, error) {
	if o.System {
		return scope{unitDir: "/etc/systemd/system", system: true}, nil
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return scope{}, err
		}
		dir = filepath.Join(home, ".config")
	}
	return scope{unitDir: filepath.Join(dir, "systemd", "user"), args: []string{"--user"}}, nil
}

// systemctl runs systemctl in the scope and returns its output.
func (s scope) systemctl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "systemctl", append(append([]string{}, s.args...), args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		return text, fmt.Errorf("systemctl %s: %w: %s", strings.Join(append(append([]string{}, s.args...), args...), " "), err, text)
	}
	return text, nil
}

// ErrNoSystemd is returned by reachable when there is no systemd manager
// to talk to (a container, WSL without systemd, a session without a
// user manager).
var ErrNoSystemd = errors.New("no systemd manager")

// reachable checks that systemctl can reach the scope's manager.
func (s scope) reachable(ctx context.Context) error {
	if _, err := exec.LookPath("systemctl"); err != nil {
		return fmt.Errorf("%w: systemctl is not installed", ErrNoSystemd)
	}
	// sd_booted(3): the system was booted with systemd.
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return fmt.Errorf("%w: the system was not booted with systemd", ErrNoSystemd)
	}
	if _, err := s.systemctl(ctx, "show-environment"); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSystemd, err)
	}
	return nil
}

// listen is the socket unit's ListenStream: %t/hutch.sock when the socket
// is the default one of the user's runtime dir, else its path.
func listen(o Options) string {
	if !o.System && o.RuntimeDir != "" && o.Socket == filepath.Join(o.RuntimeDir, "hutch.sock") {
		return "%t/hutch.sock"
	}
	return o.Socket
}

// Install writes the units, enables and starts the socket, and creates
// the docker context. A second run with the same options changes nothing
// and says so.
func Install(ctx context.Context, o Options) error {
	s, err := scopeOf(o)
	if err != nil {
		return err
	}
	w := o.Out
	var changes []string
	sdErr := s.reachable(ctx)
	if sdErr == nil {
		c, err := installUnits(ctx, s, o)
		if err != nil {
			return err
		}
		changes = append(changes, c...)
	}
	c, err := installContext(o)
	if err != nil {
		return err
	}
	changes = append(changes, c...)
	for _, c := range changes {
		fmt.Fprintln(w, c)
	}
	if sdErr != nil {
		if len(changes) == 0 {
			fmt.Fprintln(w, "The docker context hutch is already there: nothing changed.")
		}
		fmt.Fprintf(w, "hutch is not installed as a service: %v.\n", sdErr)
		fmt.Fprint(w, manual(o))
		return nil
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "hutch is already installed: nothing changed.")
	}
	fmt.Fprintf(w, "The daemon starts at the first connection to %s", o.Socket)
	if o.IdleExit > 0 {
		fmt.Fprintf(w, " and exits after %s idle", o.IdleExit)
	}
	fmt.Fprintln(w, ".")
	if !o.System && !lingering() {
		fmt.Fprintf(w, "Lingering is off for %s: the socket exists only while you are logged in. For CI runners, or to use hutch without a login session, run:\n\tsudo loginctl enable-linger %s\n", userName(), userName())
	}
	if o.Use {
		fmt.Fprintln(w, "docker uses hutch now (context hutch); `docker context use default` goes back.")
	} else {
		fmt.Fprintln(w, "Use it with `docker --context hutch …`, `docker context use hutch`, or", "DOCKER_HOST=unix://"+o.Socket)
	}
	return nil
}

// installUnits writes the unit files where they differ, reloads the
// manager if they did, and enables and starts the socket.
func installUnits(ctx context.Context, s scope, o Options) ([]string, error) {
	var changes []string
	if err := os.MkdirAll(s.unitDir, 0o755); err != nil {
		return nil, err
	}
	files := units(unitOptions{Binary: o.Binary, Listen: listen(o), IdleExit: o.IdleExit})
	for _, name := range []string{SocketUnit, ServiceUnit} {
		p := filepath.Join(s.unitDir, name)
		if old, err := os.ReadFile(p); err == nil && string(old) == files[name] {
			continue
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			return nil, err
		}
		changes = append(changes, "wrote "+p)
	}
	if len(changes) > 0 {
		if _, err := s.systemctl(ctx, "daemon-reload"); err != nil {
			return nil, err
		}
	}
	enabled, _ := s.systemctl(ctx, "is-enabled", SocketUnit)
	active, _ := s.systemctl(ctx, "is-active", SocketUnit)
	switch {
	case enabled != "enabled" || active != "active":
		if _, err := s.systemctl(ctx, "enable", "--now", SocketUnit); err != nil {
			return nil, err
		}
		changes = append(changes, "enabled and started "+SocketUnit)
	case len(changes) > 0:
		// The socket keeps its old settings, and a running daemon its
		// old command line, until restarted; the service stops with its
		// socket (Requires=) and the next connection starts the new one.
		if _, err := s.systemctl(ctx, "restart", SocketUnit); err != nil {
			return nil, err
		}
		changes = append(changes, "restarted "+SocketUnit+" (a running daemon stopped; the next connection starts it)")
	}
	return changes, nil
}

func installContext(o Options) ([]string, error) {
	dir, err := dockerConfigDir()
	if err != nil {
		return nil, err
	}
	var changes []string
	changed, err := writeContext(dir, o.Socket)
	if err != nil {
		return nil, fmt.Errorf("docker context: %w", err)
	}
	if changed {
		changes = append(changes, "created the docker context "+ContextName+" (unix://"+o.Socket+")")
	}
	if o.Use {
		cur, err := currentContext(dir)
		if err != nil {
			return nil, err
		}
		if cur != ContextName {
			if err := setCurrentContext(dir, ContextName); err != nil {
				return nil, err
			}
			changes = append(changes, "made "+ContextName+" the current docker context")
		}
	}
	return changes, nil
}

// manual is the way without a service manager.
func manual(o Options) string {
	return fmt.Sprintf(`Start the daemon by hand (it logs to stderr and stops on SIGTERM or Ctrl-C):
	%s daemon &
and point docker and the SDKs at it:
	export DOCKER_HOST=unix://%s
or use the context: docker --context %s … (docker context use %s).
`, o.Binary, o.Socket, ContextName, ContextName)
}

// lingering reports whether systemd keeps the user's manager, and so the
// socket, when the user is not logged in (loginctl enable-linger).
func lingering() bool {
	_, err := os.Stat(filepath.Join("/var/lib/systemd/linger", userName()))
	return err == nil
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprint(os.Getuid())
}

// Uninstall stops and removes the units and the context; with Purge the
// data root and the state dir too.
func Uninstall(ctx context.Context, o Options) error {
	s, err := scopeOf(o)
	if err != nil {
		return err
	}
	w := o.Out
	present := false
	for _, name := range []string{SocketUnit, ServiceUnit} {
		if _, err := os.Stat(filepath.Join(s.unitDir, name)); err == nil {
			present = true
		}
	}
	managed := present && s.reachable(ctx) == nil
	if o.Purge && !managed {
		// No service to stop: a daemon that runs was started by hand.
		// Refuse before anything is removed.
		if err := checkStopped(o.StateDir); err != nil {
			return err
		}
	}
	var changes []string
	if managed {
		if _, err := s.systemctl(ctx, "disable", "--now", SocketUnit, ServiceUnit); err != nil {
			return err
		}
		changes = append(changes, "stopped and disabled "+SocketUnit+" and "+ServiceUnit)
	}
	for _, name := range []string{SocketUnit, ServiceUnit} {
		p := filepath.Join(s.unitDir, name)
		if err := os.Remove(p); err == nil {
			changes = append(changes, "removed "+p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if managed {
		if _, err := s.systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
		s.systemctl(ctx, "reset-failed", SocketUnit, ServiceUnit)
	}
	dir, err := dockerConfigDir()
	if err != nil {
		return err
	}
	if changed, err := removeContext(dir); err != nil {
		return fmt.Errorf("docker context: %w", err)
	} else if changed {
		changes = append(changes, "removed the docker context "+ContextName)
	}
	if o.Purge {
		if err := checkStopped(o.StateDir); err != nil {
			return err
		}
		for _, d := range []string{o.DataRoot, o.StateDir} {
			removed, err := removeTree(ctx, d)
			if err != nil {
				return err
			}
			if removed {
				changes = append(changes, "removed "+d)
			}
		}
	}
	for _, c := range changes {
		fmt.Fprintln(w, c)
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "hutch is not installed: nothing to remove.")
	}
	if !o.Purge {
		fmt.Fprintf(w, "Images, containers and volumes stay in %s (hutch uninstall --purge removes them).\n", o.DataRoot)
	}
	return nil
}

// ErrRunning is a purge refused while a daemon runs on the data.
var ErrRunning = errors.New("hutch daemon is running")

// checkStopped refuses while a daemon holds the instance lock.
func checkStopped(stateDir string) error {
	f, err := os.Open(filepath.Join(stateDir, "hutch.lock"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(filepath.Join(stateDir, "hutch.pid"))
		return fmt.Errorf("%w (pid %s): stop it before --purge removes its data", ErrRunning, strings.TrimSpace(string(pid)))
	}
	return nil
}

// removeTree removes dir. Image layers hold files of the user's subuid
// range, which only a user namespace with the same mapping may delete:
// what os.RemoveAll leaves is removed from one (util-linux unshare).
func removeTree(ctx context.Context, dir string) (bool, error) {
	if dir == "" || dir == "/" {
		return false, fmt.Errorf("refusing to remove %q", dir)
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	err := os.RemoveAll(dir)
	if err == nil {
		return true, nil
	}
	if os.Geteuid() == 0 {
		return false, err
	}
	out, uerr := exec.CommandContext(ctx, "unshare", "--map-auto", "--map-root-user", "rm", "-rf", dir).CombinedOutput()
	if uerr != nil {
		return false, fmt.Errorf("removing %s: %v; in a user namespace of your subuid range (unshare --map-auto): %v %s", dir, err, uerr, bytes.TrimSpace(out))
	}
	return true, nil
}
