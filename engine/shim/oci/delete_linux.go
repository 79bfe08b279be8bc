package oci

import (
	"errors"
	"fmt"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// deleteContainer kills and removes what a dead shim left behind: its
// container's processes keep running without anyone reading their output
// (and block once the pipes fill), and libcontainer's state stays.
func deleteContainer(bundle string) error {
	cfg, err := wire.ReadConfig(bundle)
	if err != nil {
		return err
	}
	c, err := libcontainer.Load(cfg.StateDir, cfg.ID)
	if errors.Is(err, libcontainer.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st, _ := c.Status(); st != libcontainer.Stopped {
		_ = c.Signal(unix.SIGKILL)
		// The init is no longer our child: its new parent reaps it.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("container %s did not die", cfg.ID)
			}
		}
	}
	return c.Destroy()
}
