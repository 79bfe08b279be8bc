// Package preflight checks what rootless hutch needs from the host: the id
// mapping helpers, sub-id ranges, user namespaces, /dev/net/tun,
// slirp4netns, an overlay storage driver, cgroup delegation and a runtime
// directory. Each finding is an Item that carries the exact command that
// fixes it.
//
// Three callers share it: `hutch check` prints the items with Write, the
// daemon refuses to start with Fatal's one sentence, and it copies the rest
// into /info with Warnings (SingleUID tells it to map a single uid).
//
// Run it in the host's namespaces, before rootlesskit: inside them the
// process is uid 0 and the checks would describe the wrong user.
package preflight

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/containerd/errdefs"
)

// Status is the outcome of one check.
type Status int

const (
	// OK means the requirement is met.
	OK Status = iota
	// Warning means hutch works, with a stated loss (speed, limits).
	Warning
	// Missing means the requirement is not met. When the Item is Required
	// the daemon cannot start; otherwise it degrades (single-UID mode, no
	// container network) and says so.
	Missing
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warning:
		return "warning"
	case Missing:
		return "missing"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// Check names the requirement an Item reports on; several Items may share
// one (newuidmap and newgidmap are both CheckIDMap).
type Check string

// The checks, in the order Run reports them.
const (
	CheckIDMap      Check = "idmap"  // newuidmap, newgidmap
	CheckSubID      Check = "subid"  // /etc/subuid, /etc/subgid
	CheckUserNS     Check = "userns" // unprivileged user namespaces
	CheckTun        Check = "tun"    // /dev/net/tun for slirp4netns
	CheckSlirp      Check = "slirp4netns"
	CheckStorage    Check = "storage"    // overlay, fuse-overlayfs or vfs
	CheckCgroup     Check = "cgroup"     // delegation for resource limits
	CheckRuntimeDir Check = "runtimedir" // XDG_RUNTIME_DIR or its fallback
	CheckDataDir    Check = "datadir"    // not readable by others
)

// Checks lists every Check in report order.
var Checks = []Check{CheckIDMap, CheckSubID, CheckUserNS, CheckTun, CheckSlirp, CheckStorage, CheckCgroup, CheckRuntimeDir, CheckDataDir}

// Item is one line of the report.
type Item struct {
	Check    Check
	Name     string // what was checked, e.g. "newuidmap", "subuid range"
	Status   Status
	Detail   string // what was found and what it means for hutch
	Fix      string // the exact command or change that fixes it; "" when OK
	Required bool   // Missing and Required: the daemon cannot start
}

// SingleUIDLimits says what single-UID mode costs; the daemon repeats it in
// its log and /info.
const SingleUIDLimits = "only uid 0 and gid 0 exist in containers: image files owned by other ids are extracted as root, " +
	"and switching to another user (USER, su, setuid, chown to another id) fails"

// rootNotNeeded is the Detail of checks that rootful mode skips.
const rootNotNeeded = "running as root: rootless checks not needed"

// Run performs every check and returns the items in the order of Checks.
// Probes that start processes are bounded by ctx.
func Run(ctx context.Context, env Env) []Item {
	if env.LookPath == nil {
		env.LookPath = exec.LookPath
	}
	var items []Item
	for _, c := range checkFuncs() {
		items = append(items, c(ctx, &env)...)
	}
	return items
}

// Fatal returns the first Missing Required item as one sentence ending with
// its fix, classed errdefs.ErrFailedPrecondition; nil when the daemon can
// start.
func Fatal(items []Item) error {
	for _, it := range items {
		if it.Status == Missing && it.Required {
			return &fatalError{item: it}
		}
	}
	return nil
}

type fatalError struct{ item Item }

func (e *fatalError) Error() string {
	msg := e.item.Name + ": " + e.item.Detail
	if e.item.Fix != "" {
		msg += "; fix: " + e.item.Fix
	}
	return msg
}

func (e *fatalError) Unwrap() error { return errdefs.ErrFailedPrecondition }

// SingleUID reports whether the daemon must map only its own uid and gid
// because newuidmap/newgidmap or the sub-id ranges are unusable. A range
// that is merely short is a Warning: the daemon maps what there is.
func SingleUID(items []Item) bool {
	for _, it := range items {
		if (it.Check == CheckIDMap || it.Check == CheckSubID) && it.Status == Missing {
			return true
		}
	}
	return false
}

// NoNetwork returns the first Missing item that keeps slirp4netns from
// serving the containers' network (it is not installed, or /dev/net/tun
// cannot be opened), as one sentence ending with its fix; "" when nothing
// stops it.
func NoNetwork(items []Item) string {
	for _, it := range items {
		if (it.Check == CheckTun || it.Check == CheckSlirp) && it.Status == Missing {
			return (&fatalError{item: it}).Error()
		}
	}
	return ""
}

// noNetwork is what containers get where slirp4netns cannot run.
const noNetwork = "containers get no network except --network host"

// NoNetworkLimits says what a daemon without slirp4netns gives containers;
// the daemon repeats it in its log and /info.
const NoNetworkLimits = noNetwork + " (their own namespace with loopback only; published ports are not reachable)"

// Warnings turns every item that is not OK into one sentence for /info and
// the log, starting with single-UID mode and its limits when it applies.
func Warnings(items []Item) []string {
	var out []string
	if SingleUID(items) {
		out = append(out, "running in single-UID mode: "+SingleUIDLimits)
	}
	for _, it := range items {
		if it.Status == OK {
			continue
		}
		s := it.Name + ": " + it.Detail
		if it.Fix != "" {
			s += "; fix: " + it.Fix
		}
		out = append(out, s)
	}
	return out
}

// Write prints one aligned line per item:
//
//	ok       newuidmap     /usr/bin/newuidmap (setuid root)
//	missing  subuid range  no range for alice (uid 1000) in /etc/subuid: hutch falls back to single-UID mode; fix: run as root: usermod --add-subuids 100000-165535 alice
//
// A Missing Required item is marked "(required)"; fixes of OK items are
// not printed.
func Write(w io.Writer, items []Item) error {
	width := 0
	for _, it := range items {
		width = max(width, len(it.Name))
	}
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%-8s %-*s  %s", it.Status, width, it.Name, it.Detail)
		if it.Status == Missing && it.Required {
			b.WriteString(" (required)")
		}
		if it.Status != OK && it.Fix != "" {
			b.WriteString("; fix: " + it.Fix)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkFunc reports on one Check; env has LookPath set.
type checkFunc func(ctx context.Context, env *Env) []Item
