package storage

import (
	cstorage "go.podman.io/storage"
	"go.podman.io/storage/pkg/mount"
)

// resetStaleMounts forgets the mounts a killed daemon recorded but that do
// not exist here: a rootless daemon starts in a new mount namespace, where
// none of the old one's mounts are. containers/storage keeps its mount
// counts in the run root, which outlives the daemon; it remounts such a
// layer on the next mount but adds to the stale count, and the unmount
// that follows leaves the new mount in place (a retried commit of a
// container whose commit the kill interrupted leaked its rootfs mount).
// Layers really mounted (real root, where the mount namespace is the
// host's and a running container needs its rootfs) keep their counts.
func resetStaleMounts(cs cstorage.Store) (int, error) {
	layers, err := cs.Layers()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range layers {
		if l.MountCount == 0 || l.MountPoint == "" {
			continue
		}
		if mounted, err := mount.Mounted(l.MountPoint); err == nil && mounted {
			continue
		}
		if _, err := cs.Unmount(l.ID, true); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
