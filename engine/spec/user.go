package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/moby/sys/user"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// maxUserFile bounds how much of the image's /etc/passwd or /etc/group is
// read: the files come from untrusted images.
const maxUserFile = 8 << 20

// ResolveUser resolves a Docker user spec ("", "uid", "uid:gid", "name",
// "name:group", or mixed) and the extra groups of --group-add through the
// /etc/passwd and /etc/group of rootfs, with Docker's semantics (the
// process's primary group comes first in AdditionalGids, then the groups
// that list the user, then groupAdd). The files are opened inside rootfs:
// symlinks resolve as if rootfs were "/", so an image cannot make the engine
// read a host file. Missing files are fine for numeric ids.
//
// A user or group the files do not know is errdefs.ErrInvalidArgument
// ("unable to find user x: no matching entries in passwd file").
//
// singleUID says the user namespace maps only id 0 (hutch's single-UID
// mode): any other uid or gid would fail in setuid(2) or setgid(2) with a
// message that does not say why, so it is an errdefs.ErrInvalidArgument
// that does. Supplementary groups from the image's /etc/group are dropped
// there (they cannot be set, and nobody asked for them); one asked for with
// groupAdd is an error.
func ResolveUser(rootfs, userSpec string, groupAdd []string, singleUID bool) (specs.User, error) {
	passwd, err := readRootFile(rootfs, "/etc/passwd")
	if err != nil {
		return specs.User{}, err
	}
	group, err := readRootFile(rootfs, "/etc/group")
	if err != nil {
		return specs.User{}, err
	}
	return resolveUser(userSpec, groupAdd, passwd, group, singleUID)
}

// resolveUser does the lookup on file contents; nil means the file is
// missing.
func resolveUser(userSpec string, groupAdd []string, passwd, group []byte, singleUID bool) (specs.User, error) {
	eu, err := user.GetExecUser(userSpec, nil, reader(passwd), reader(group))
	if err != nil {
		return specs.User{}, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	u := specs.User{UID: uint32(eu.Uid), GID: uint32(eu.Gid)}
	var extra []int
	if len(groupAdd) > 0 {
		if extra, err = user.GetAdditionalGroups(groupAdd, reader(group)); err != nil {
			return specs.User{}, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		// GetAdditionalGroups answers in map order: sort for a stable spec.
		slices.Sort(extra)
	}
	if singleUID {
		if err := checkSingleUID(u, userSpec, extra); err != nil {
			return specs.User{}, err
		}
		u.AdditionalGids = []uint32{0}
		return u, nil
	}
	gids := []uint32{u.GID}
	for _, g := range append(eu.Sgids, extra...) {
		gids = appendNew(gids, uint32(g))
	}
	u.AdditionalGids = gids
	return u, nil
}

func appendNew(s []uint32, v uint32) []uint32 {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// reader keeps "missing" (nil) distinct from "empty": moby/sys/user treats
// a nil reader as no file at all.
func reader(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}

func checkSingleUID(u specs.User, userSpec string, groupAdd []int) error {
	const why = "hutch runs in single-UID mode (no subordinate id range for this user in /etc/subuid and /etc/subgid), where containers have only uid and gid 0"
	if u.UID != 0 {
		return fmt.Errorf("user %q is uid %d, but %s: %w", userSpec, u.UID, why, errdefs.ErrInvalidArgument)
	}
	if u.GID != 0 {
		return fmt.Errorf("user %q has gid %d, but %s: %w", userSpec, u.GID, why, errdefs.ErrInvalidArgument)
	}
	for _, g := range groupAdd {
		if g != 0 {
			return fmt.Errorf("--group-add: gid %d: %s: %w", g, why, errdefs.ErrInvalidArgument)
		}
	}
	return nil
}

var errNotRegular = errors.New("not a regular file")

// fileError classes an error reading one of the image's user files.
func fileError(name string, err error) error {
	switch {
	case errors.Is(err, errNotRegular):
		return fmt.Errorf("%s in the image: %w: %w", name, err, errdefs.ErrInvalidArgument)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("reading %s in the image: %w: %w", name, err, errdefs.ErrPermissionDenied)
	default:
		return fmt.Errorf("reading %s in the image: %w", name, err)
	}
}
