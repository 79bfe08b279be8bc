package spec

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	"github.com/moby/sys/capability"
)

// defaultCaps is Docker's default capability set.
var defaultCaps = []string{
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_FSETID",
	"CAP_FOWNER",
	"CAP_MKNOD",
	"CAP_NET_RAW",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETFCAP",
	"CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT",
	"CAP_KILL",
	"CAP_AUDIT_WRITE",
}

// capSet is what the engine knows about capabilities: the names the
// library knows, and which of them the engine itself holds (a container
// cannot get more; "ALL" means these).
type capSet struct {
	known     map[string]bool
	available []string
}

var hostCaps = sync.OnceValue(func() capSet {
	var s capSet
	s.known = map[string]bool{}
	for _, c := range capability.ListKnown() {
		s.known[capName(c)] = true
	}
	if cur, err := capability.NewPid2(0); err == nil && cur.Load() == nil {
		for _, c := range capability.ListKnown() {
			if cur.Get(capability.EFFECTIVE, c) {
				s.available = append(s.available, capName(c))
			}
		}
	}
	if len(s.available) == 0 {
		// No capabilities of our own (an unprivileged test run) or no
		// /proc: offer what the kernel knows and let the runtime refuse,
		// rather than refusing every --cap-add here.
		all, err := capability.ListSupported()
		if err != nil {
			all = capability.ListKnown()
		}
		for _, c := range all {
			s.available = append(s.available, capName(c))
		}
	}
	return s
})

func capName(c capability.Cap) string { return "CAP_" + strings.ToUpper(c.String()) }

const allCaps = "ALL"

// normalizeCaps upper-cases names and adds the CAP_ prefix, as Docker
// accepts "net_admin", "NET_ADMIN" and "CAP_NET_ADMIN" alike.
func (s capSet) normalize(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		c := strings.ToUpper(strings.TrimSpace(n))
		if c != allCaps && !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		switch {
		case c == allCaps:
		case !s.known[c]:
			return nil, fmt.Errorf("unknown capability: %q: %w", c, errdefs.ErrInvalidArgument)
		case !slices.Contains(s.available, c):
			return nil, fmt.Errorf("capability not supported by your kernel or not available in the current environment: %q: %w", c, errdefs.ErrInvalidArgument)
		}
		out = append(out, c)
	}
	return out, nil
}

// capabilities applies --cap-add and --cap-drop to Docker's defaults with
// Docker's rules: adding ALL gives every available capability but the
// dropped ones, dropping ALL keeps only the added ones; privileged
// containers get everything.
func (s capSet) capabilities(add, drop []string, privileged bool) ([]string, error) {
	if privileged {
		return slices.Clone(s.available), nil
	}
	drops, err := s.normalize(drop)
	if err != nil {
		return nil, err
	}
	adds, err := s.normalize(add)
	if err != nil {
		return nil, err
	}
	var base []string
	switch {
	case slices.Contains(adds, allCaps):
		base = s.available
	case slices.Contains(drops, allCaps):
	default:
		base = defaultCaps
	}
	var out []string
	for _, c := range base {
		if !slices.Contains(drops, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if !slices.Contains(adds, allCaps) {
		for _, c := range adds {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}
