package preflight

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

const installUIDMap = "install it: apt-get install uidmap (Debian/Ubuntu), dnf install shadow-utils (Fedora/RHEL)"

func checkIDMap(_ context.Context, env *Env) []Item {
	return []Item{
		idmapItem(env, "newuidmap", unix.CAP_SETUID),
		idmapItem(env, "newgidmap", unix.CAP_SETGID),
	}
}

// idmapItem checks that tool exists and can write another process's id map:
// it needs to be setuid root, or to carry capability cp as a file capability
// (Fedora ships it that way).
func idmapItem(env *Env, tool string, cp int) Item {
	it := Item{Check: CheckIDMap, Name: tool}
	if env.Rootful {
		it.Detail = rootNotNeeded
		return it
	}
	path, err := env.LookPath(tool)
	if err != nil {
		it.Status = Missing
		it.Detail = "not found on PATH: hutch falls back to single-UID mode"
		it.Fix = installUIDMap
		return it
	}
	priv, err := privileged(path, cp)
	if err != nil {
		it.Status = Missing
		it.Detail = fmt.Sprintf("%s: %v: hutch falls back to single-UID mode", path, err)
		it.Fix = fmt.Sprintf("run as root: chmod u+s %s (or reinstall it: %s)", path, installUIDMap)
		return it
	}
	it.Detail = fmt.Sprintf("%s (%s)", path, priv)
	return it
}

// privileged says how path gets the right to map ids, or why it cannot.
func privileged(path string, cp int) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err == nil && sfs.Flags&unix.ST_NOSUID != 0 {
		return "", errors.New("its file system is mounted nosuid, so neither setuid nor file capabilities apply")
	}
	if st.Mode&unix.S_ISUID != 0 && st.Uid == 0 {
		return "setuid root", nil
	}
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "security.capability", buf)
	if err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, syscall.ENOTSUP) {
		return "", fmt.Errorf("reading its file capabilities: %w", err)
	}
	if err == nil {
		perm, eff, err := parseFileCaps(buf[:n])
		if err != nil {
			return "", err
		}
		if perm&(1<<uint(cp)) != 0 && eff {
			return "file capability " + capName(cp), nil
		}
	}
	return "", fmt.Errorf("neither setuid root nor with file capability %s+ep", capName(cp))
}

func capName(cp int) string {
	switch cp {
	case unix.CAP_SETUID:
		return "cap_setuid"
	case unix.CAP_SETGID:
		return "cap_setgid"
	}
	return fmt.Sprintf("cap_%d", cp)
}

// Layout of the security.capability xattr (struct vfs_ns_cap_data in
// linux/capability.h): le32 magic_etc, then {le32 permitted, le32
// inheritable} for each 32 capabilities, then in revision 3 le32 rootid.
const (
	vfsCapRevisionMask = 0xFF000000
	vfsCapRevision1    = 0x01000000
	vfsCapRevision2    = 0x02000000
	vfsCapRevision3    = 0x03000000
	vfsCapEffective    = 0x000001
)

// parseFileCaps returns the permitted set and the effective flag of file
// capabilities that apply in the initial user namespace.
func parseFileCaps(b []byte) (permitted uint64, effective bool, err error) {
	if len(b) < 4 {
		return 0, false, fmt.Errorf("file capabilities: %d bytes", len(b))
	}
	magic := binary.LittleEndian.Uint32(b)
	words, size := 0, 0
	switch magic & vfsCapRevisionMask {
	case vfsCapRevision1:
		words, size = 1, 12
	case vfsCapRevision2:
		words, size = 2, 20
	case vfsCapRevision3:
		words, size = 2, 24
	default:
		return 0, false, fmt.Errorf("file capabilities: unknown revision %#x", magic&vfsCapRevisionMask)
	}
	if len(b) != size {
		return 0, false, fmt.Errorf("file capabilities: revision %#x with %d bytes, want %d", magic&vfsCapRevisionMask, len(b), size)
	}
	for i := range words {
		permitted |= uint64(binary.LittleEndian.Uint32(b[4+8*i:])) << (32 * i)
	}
	if size == 24 && binary.LittleEndian.Uint32(b[20:]) != 0 {
		// Namespaced file capabilities only apply in the user namespace
		// whose root is rootid, not where newuidmap runs.
		return 0, false, nil
	}
	return permitted, magic&vfsCapEffective != 0, nil
}
