package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/unshare"
)

// driverRecordFile remembers the driver a graph root was created with: both
// native overlay and fuse-overlayfs keep their layers under "overlay/", and a
// later probe must not switch between them (or to vfs) under existing images.
const driverRecordFile = "hutch-driver"

// driverChoice is one candidate of the probe order.
type driverChoice struct {
	name         string // DriverOverlay, DriverFuse or DriverVFS
	mountProgram string // fuse-overlayfs path for DriverFuse
}

// storageDriver is the go.podman.io/storage driver name.
func (c driverChoice) storageDriver() string {
	if c.name == DriverVFS {
		return "vfs"
	}
	return "overlay"
}

func (c driverChoice) driverOptions(singleUID bool) []string {
	var o []string
	prefix := c.storageDriver() + "."
	if c.name == DriverFuse {
		o = append(o, prefix+"mount_program="+c.mountProgram)
	}
	if singleUID {
		o = append(o, prefix+"ignore_chown_errors=true")
	}
	return o
}

// normalizeDriver maps user spellings to the names Store.Driver reports.
func normalizeDriver(name string) (string, error) {
	switch strings.ToLower(name) {
	case "":
		return "", nil
	case "overlay", "overlay2", "overlayfs":
		return DriverOverlay, nil
	case "fuse-overlayfs", "fuse":
		return DriverFuse, nil
	case "vfs":
		return DriverVFS, nil
	}
	return "", fmt.Errorf("storage: unknown storage driver %q (want overlay, fuse-overlayfs or vfs): %w", name, errdefs.ErrInvalidArgument)
}

// openDriver picks the driver (forced, recorded, or probed in order) and
// opens the library store with it.
func openDriver(ctx context.Context, opts Options, log *slog.Logger) (cstorage.Store, driverChoice, error) {
	forced, err := normalizeDriver(opts.Driver)
	if err != nil {
		return nil, driverChoice{}, err
	}
	recorded, err := readDriverRecord(opts.GraphRoot)
	if err != nil {
		return nil, driverChoice{}, err
	}
	if forced != "" && recorded != "" && forced != recorded {
		log.Warn("storage: driver differs from the one this graph root was created with; images stored with the other driver are not visible",
			"driver", forced, "recorded", recorded, "graphroot", opts.GraphRoot)
	}
	want := forced
	if want == "" {
		want = recorded
	}
	// Whatever a failed attempt creates is removed again, so that the next
	// candidate and the next start see the graph root as it was.
	fresh := missingDriverDirs(opts)
	attempt := func(name string) (cstorage.Store, driverChoice, error) {
		choice, err := prepareDriver(ctx, name, opts)
		if err == nil {
			var cs cstorage.Store
			if cs, err = cstorage.GetStore(storeOptions(opts, choice)); err == nil {
				if err = writeDriverRecord(opts.GraphRoot, choice.name); err == nil {
					return cs, choice, nil
				}
				_, _ = cs.Shutdown(true)
			}
		}
		unmountUnder(opts.GraphRoot, opts.RunRoot)
		for _, d := range fresh {
			_ = os.RemoveAll(d)
		}
		return nil, driverChoice{}, err
	}
	if want != "" {
		cs, choice, err := attempt(want)
		if err != nil {
			return nil, driverChoice{}, fmt.Errorf("storage: driver %s at %s: %w", want, opts.GraphRoot, err)
		}
		return cs, choice, nil
	}
	var failures []string
	for _, name := range []string{DriverOverlay, DriverFuse, DriverVFS} {
		cs, choice, err := attempt(name)
		if err == nil {
			log.Info("storage: driver probed", "driver", name, "unusable", failures)
			return cs, choice, nil
		}
		log.Debug("storage: driver unusable", "driver", name, "err", err)
		failures = append(failures, fmt.Sprintf("%s: %v", name, err))
	}
	return nil, driverChoice{}, fmt.Errorf("storage: no usable storage driver: %s", strings.Join(failures, "; "))
}

// missingDriverDirs lists the directories the library creates for any
// driver that do not exist yet.
func missingDriverDirs(opts Options) []string {
	var out []string
	for _, n := range []string{"overlay", "vfs"} {
		for _, d := range []string{
			filepath.Join(opts.GraphRoot, n),
			filepath.Join(opts.GraphRoot, n+"-images"),
			filepath.Join(opts.GraphRoot, n+"-layers"),
			filepath.Join(opts.GraphRoot, n+"-containers"),
			filepath.Join(opts.RunRoot, n),
			filepath.Join(opts.RunRoot, n+"-containers"),
			filepath.Join(opts.RunRoot, n+"-layers"),
		} {
			if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
				out = append(out, d)
			}
		}
	}
	return out
}

func readDriverRecord(graphRoot string) (string, error) {
	b, err := os.ReadFile(filepath.Join(graphRoot, driverRecordFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	name, err := normalizeDriver(strings.TrimSpace(string(b)))
	if err != nil {
		return "", fmt.Errorf("storage: %s: %w", filepath.Join(graphRoot, driverRecordFile), err)
	}
	return name, nil
}

func writeDriverRecord(graphRoot, name string) error {
	path := filepath.Join(graphRoot, driverRecordFile)
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == name {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(name+"\n"), 0o600); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// dockerDriverStatus reshapes the library's driver status into the keys
// Docker's overlay2 driver reports in /info.
func dockerDriverStatus(choice driverChoice, raw [][2]string) [][2]string {
	get := func(key string) string {
		for _, kv := range raw {
			if kv[0] == key {
				return kv[1]
			}
		}
		return ""
	}
	switch choice.name {
	case DriverOverlay:
		return [][2]string{
			{"Backing Filesystem", get("Backing Filesystem")},
			{"Supports d_type", get("Supports d_type")},
			{"Using metacopy", get("Using metacopy")},
			{"Native Overlay Diff", get("Native Overlay Diff")},
			{"userxattr", fmt.Sprint(unshare.IsRootless())},
		}
	case DriverFuse:
		return [][2]string{
			{"Backing Filesystem", get("Backing Filesystem")},
			{"Supports d_type", get("Supports d_type")},
			{"Mount Program", choice.mountProgram},
		}
	}
	return nil
}
