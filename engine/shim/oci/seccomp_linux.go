package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/hutch-engine/hutch/engine/shim/oci/filter"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// The container's seccomp filter is compiled here, once per profile, and
// installed by its init from the program passed as filter.Fd rather than
// compiled by libcontainer in every init (package filter says why).
const (
	// seccompLabel marks, in libcontainer's config, a container whose
	// processes must get the program in its state directory: an exec
	// without it fails rather than run unfiltered.
	seccompLabel = "hutch.seccomp=1"
	// seccompFile is the program, in the container's state directory.
	seccompFile = "seccomp.bpf"
)

var (
	cachesMu sync.Mutex
	caches   = map[string]*filter.Cache{}
)

// programs is the cache beside the libcontainer root stateDir (not in it:
// every entry there is a container).
func programs(stateDir string) *filter.Cache {
	dir := filepath.Join(filepath.Dir(filepath.Clean(stateDir)), "seccomp")
	cachesMu.Lock()
	defer cachesMu.Unlock()
	c := caches[dir]
	if c == nil {
		c = filter.NewCache(dir)
		caches[dir] = c
	}
	return c
}

// markSeccomp labels lc as a container with a filter.
func markSeccomp(lc *configs.Config) { lc.Labels = append(lc.Labels, seccompLabel) }

// saveSeccomp keeps the program in the container's state directory, which
// libcontainer made and removes with the container, for its execs.
func saveSeccomp(cfg *wire.Config, prog []byte) error {
	return os.WriteFile(filepath.Join(cfg.StateDir, cfg.ID, seccompFile), prog, 0o600)
}

// execSeccomp is the program of c's execs: nil for a container without a
// filter, an error if it has one and the program is gone.
func execSeccomp(cfg *wire.Config, c *libcontainer.Container) ([]byte, error) {
	if !slices.Contains(c.Config().Labels, seccompLabel) {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.StateDir, cfg.ID, seccompFile))
	if err != nil {
		return nil, fmt.Errorf("the container's seccomp filter: %w", err)
	}
	return b, nil
}

// passSeccomp gives p the program as its first extra file (filter.Fd);
// the returned file is closed once p is started.
func passSeccomp(p *libcontainer.Process, prog []byte) (*os.File, error) {
	if prog == nil {
		return nil, nil
	}
	f, err := filter.File(prog)
	if err != nil {
		return nil, err
	}
	p.ExtraFiles = append([]*os.File{f}, p.ExtraFiles...)
	return f, nil
}
