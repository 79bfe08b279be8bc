package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/containerd/errdefs"
)

// Where ResolveRuntimeDir found the runtime directory.
const (
	SourceXDG     = "XDG_RUNTIME_DIR"
	SourceRunUser = "/run/user fallback"
	SourceTmpDir  = "TMPDIR fallback"
)

// ResolveRuntimeDir picks the rootless daemon's runtime directory (socket,
// pid file, state) as docs/design.md (Contract) fixes it: $XDG_RUNTIME_DIR when set, which
// must then be a directory owned by the user with mode 0700; else
// /run/user/$UID when it exists and is ours; else $TMPDIR/hutch-$UID.
//
// The last one may not exist yet: the caller creates it with
// os.Mkdir(dir, 0o700) and resolves again, which refuses a directory that
// another user planted there first. Errors are classed ErrInvalidArgument,
// ErrNotFound or ErrFailedPrecondition.
func ResolveRuntimeDir(env Env) (dir, source string, err error) {
	dir, source, _, err = resolveRuntimeDir(env)
	return dir, source, err
}

// resolveRuntimeDir is ResolveRuntimeDir that also says how to fix an error.
func resolveRuntimeDir(env Env) (dir, source, fix string, err error) {
	if x := env.RuntimeDir; x != "" {
		if !filepath.IsAbs(x) {
			return "", SourceXDG, "export XDG_RUNTIME_DIR as an absolute path",
				classErr(errdefs.ErrInvalidArgument, "XDG_RUNTIME_DIR=%q is not an absolute path", x)
		}
		err := privateDir(x, env.UID, os.Stat)
		switch {
		case errors.Is(err, errdefs.ErrNotFound):
			fix = fmt.Sprintf("mkdir -m 700 %s, or unset XDG_RUNTIME_DIR", x)
		case errors.Is(err, errWrongMode):
			fix = "chmod 700 " + x
		case err != nil:
			fix = "unset XDG_RUNTIME_DIR, or set it to a directory you own with mode 0700"
		}
		if err != nil {
			return "", SourceXDG, fix, fmt.Errorf("XDG_RUNTIME_DIR: %w", err)
		}
		return x, SourceXDG, "", nil
	}
	uid := strconv.Itoa(env.UID)
	if d := filepath.Join(env.RunUser, uid); privateDir(d, env.UID, os.Lstat) == nil {
		return d, SourceRunUser, "", nil
	}
	d := filepath.Join(env.TmpDir, "hutch-"+uid)
	err = privateDir(d, env.UID, os.Lstat)
	switch {
	case err == nil, errors.Is(err, errdefs.ErrNotFound):
		return d, SourceTmpDir, "", nil
	case errors.Is(err, errWrongMode):
		fix = "chmod 700 " + d
	default:
		fix = fmt.Sprintf("set XDG_RUNTIME_DIR to a directory you own with mode 0700, or run as root: rm -rf %s", d)
	}
	return "", SourceTmpDir, fix, err
}

// classed is an error whose message is for people and whose class is for
// errors.Is: the class's own text ("failed precondition") stays out of the
// sentence hutch check prints.
type classed struct {
	msg   string
	class error
}

func (e *classed) Error() string { return e.msg }
func (e *classed) Unwrap() error { return e.class }

func classErr(class error, format string, args ...any) error {
	return &classed{msg: fmt.Sprintf(format, args...), class: class}
}

var errWrongMode = classErr(errdefs.ErrFailedPrecondition, "mode is not 0700")

// privateDir checks that path is a directory of uid with mode 0700; stat
// is os.Lstat where another user could plant a symlink.
func privateDir(path string, uid int, stat func(string) (fs.FileInfo, error)) error {
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return classErr(errdefs.ErrNotFound, "%s does not exist", path)
	}
	if err != nil {
		return classErr(errdefs.ErrFailedPrecondition, "%v", err)
	}
	if !fi.IsDir() {
		return classErr(errdefs.ErrFailedPrecondition, "%s is not a directory", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
		return classErr(errdefs.ErrFailedPrecondition, "%s belongs to uid %d, not %d", path, st.Uid, uid)
	}
	if fi.Mode().Perm() != 0o700 {
		return classErr(errWrongMode, "%s has mode %#o, not 0700", path, fi.Mode().Perm())
	}
	return nil
}

func checkRuntimeDir(_ context.Context, env *Env) []Item {
	it := Item{Check: CheckRuntimeDir, Name: "runtime dir", Required: true}
	if env.Rootful {
		it.Detail = rootNotNeeded + " (socket /run/hutch/hutch.sock)"
		return []Item{it}
	}
	dir, source, fix, err := resolveRuntimeDir(*env)
	switch {
	case err != nil:
		it.Status, it.Detail, it.Fix = Missing, err.Error(), fix
	case source == SourceXDG:
		it.Detail = dir + " (XDG_RUNTIME_DIR)"
	case source == SourceRunUser:
		it.Detail = fmt.Sprintf("XDG_RUNTIME_DIR is unset: using %s", dir)
	default:
		runUser := filepath.Join(env.RunUser, strconv.Itoa(env.UID))
		why := "does not exist"
		if _, err := os.Lstat(runUser); err == nil {
			why = "is not a directory of ours with mode 0700"
		}
		it.Status = Warning
		it.Detail = fmt.Sprintf("XDG_RUNTIME_DIR is unset and %s %s: using %s, where tmp cleaners may remove the socket", runUser, why, dir)
		name := env.User
		if name == "" {
			name = strconv.Itoa(env.UID)
		}
		it.Fix = fmt.Sprintf("run as root: loginctl enable-linger %s, then log in again (or export XDG_RUNTIME_DIR=/run/user/%d)", name, env.UID)
	}
	return []Item{it}
}
