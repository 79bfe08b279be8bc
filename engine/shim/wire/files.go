package wire

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// WriteExit stores st at path atomically (temp file, rename), so that a
// reader after a crash of any process sees either nothing or the whole
// status.
func WriteExit(path string, st ExitStatus) error {
	b, err := st.MarshalJSON()
	if err != nil {
		return err
	}
	// No fsync: the exit must survive the death of the engine or the shim
	// (the page cache keeps it), not a power loss, after which reconcile
	// marks the container's end anyway. The rename keeps it whole.
	if err := atomicfile.Write(path, b, 0o600, false); err != nil {
		return Wrap("write exit status "+path, err)
	}
	return nil
}

// ReadExit reads an exit status written by a shim. A missing file is
// errdefs.ErrNotFound: the shim has not finished (or never ran).
func ReadExit(path string) (ExitStatus, error) {
	var st ExitStatus
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, Wrap("exit status "+path, errdefs.ErrNotFound)
	}
	if err != nil {
		return st, err
	}
	if err := st.UnmarshalJSON(b); err != nil {
		return st, Wrap("exit status "+path, errdefs.ErrDataLoss)
	}
	return st, nil
}

// ReadConfig reads the bundle's shim.json, which the shim and hutch-runtime
// both follow.
func ReadConfig(bundle string) (*Config, error) {
	b, err := os.ReadFile(filepath.Join(bundle, ConfigFile))
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := cfg.UnmarshalJSON(b); err != nil {
		return nil, Wrap(ConfigFile, err, errdefs.ErrInvalidArgument)
	}
	if !filepath.IsAbs(cfg.RuntimeBinary) {
		return nil, Wrap(ConfigFile+": runtime binary "+strconv.Quote(cfg.RuntimeBinary)+" is not absolute", errdefs.ErrInvalidArgument)
	}
	return &cfg, nil
}
