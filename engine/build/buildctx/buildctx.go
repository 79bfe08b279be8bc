// Package buildctx is the build context of Docker's classic builder
// (POST /build): the tar stream of the request body unpacked into a
// private directory, with .dockerignore applied, from which the
// Dockerfile is read and COPY and ADD take their files.
//
// The archive is untrusted. Extract makes every entry with *at calls in
// a directory resolved inside the context (package inroot), never
// following the entry's own name, so no name, hard link or symlink of
// the archive writes outside the directory. Later reads resolve paths
// inside the context too and refuse any ".." or symlink that leads out
// of it.
//
// Paths that .dockerignore excludes leave the context tree for a hidden
// directory inside it (".buildctx-<random>", which Tar never shows):
// only Dockerfile looks there, since the docker CLI sends the Dockerfile
// even when .dockerignore excludes it.
//
// An engine that runs without CAP_DAC_OVERRIDE stores files and
// directories with the owner's read (and search) bits added so that it
// can read them back; the modes it reports in Tar are the archive's.
package buildctx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hutch-engine/hutch/internal/inroot"
	"golang.org/x/sys/unix"
)

// Error is a user error (the API answers 400 for it); its message is
// shown to the user as is.
type Error struct{ Msg string }

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

func userErrorf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Context is an extracted build context.
type Context struct {
	dir  string // absolute path of the context tree
	priv string // name, in dir, of the engine's hidden directory
	// modes are, by inode number, the modes of the files stored with
	// more permissions than the archive gave (see the package comment).
	modes map[uint64]uint32
}

// Dir is the directory holding the context.
func (c *Context) Dir() string { return c.dir }

// Close removes the directory.
func (c *Context) Close() error {
	if err := os.RemoveAll(c.dir); err == nil {
		return nil
	}
	// An unprivileged engine cannot empty the directories the archive
	// made read-only: give them back to their owner first.
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("removing the build context: %w", err)
	}
	return nil
}

// Dockerfile reads the Dockerfile at name (relative to the context; ""
// means "Dockerfile", and when that is missing, "dockerfile", as Docker
// does). The name is resolved inside the context (symlinks within the
// context are followed but can never lead out of it). Missing: an *Error
// whose message is Docker's: `Cannot locate specified Dockerfile: <name>`.
func (c *Context) Dockerfile(name string) ([]byte, error) {
	shown := name
	if name == "" {
		shown = "Dockerfile"
	}
	b, err := c.readDockerfile(shown)
	if name == "" && errors.Is(err, fs.ErrNotExist) {
		b, err = c.readDockerfile("dockerfile")
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, userErrorf("Cannot locate specified Dockerfile: %s", shown)
	}
	if err == nil && len(b) == 0 {
		// Docker's words for a file of no bytes; one of only comments
		// or blank lines is the parser's "file with no instructions".
		return nil, userErrorf("the Dockerfile (%s) cannot be empty", shown)
	}
	return b, err
}

// readDockerfile reads name in the context or, failing that, among the
// paths .dockerignore excluded.
func (c *Context) readDockerfile(name string) ([]byte, error) {
	b, err := readIn(c.dir, name, c.priv)
	if errors.Is(err, fs.ErrNotExist) {
		b, err = readIn(c.excludedDir(), name, "")
	}
	if errors.Is(err, errOutside) {
		return nil, userErrorf("forbidden path outside the build context: %s ()", name)
	}
	if errors.Is(err, syscall.EISDIR) {
		return nil, fs.ErrNotExist
	}
	return b, err
}

// excludedDir holds the paths .dockerignore excluded.
func (c *Context) excludedDir() string { return filepath.Join(c.dir, c.priv, "excluded") }

// errOutside is a path that leads out of the context.
var errOutside = errors.New("path outside the build context")

// resolve follows rel, a slash-separated path, inside base, every
// symlink included, and returns the path it names relative to base (""
// for base itself). A ".." or a symlink that leads out of base (absolute
// symlinks included) is errOutside; a missing component, or one that is
// not a directory where one is needed, is fs.ErrNotExist, as is anything
// under hidden, a name in base.
func resolve(base, rel, hidden string) (string, error) {
	r, err := inroot.Open(base)
	if err != nil {
		return "", err
	}
	defer r.Close()
	return resolveIn(r, rel, hidden)
}

func resolveIn(r *inroot.Root, rel, hidden string) (string, error) {
	p, err := r.Resolve(strings.TrimLeft(rel, "/"), inroot.Beneath)
	if errors.Is(err, inroot.ErrEscape) {
		return "", errOutside
	} else if err != nil {
		return "", err
	}
	p = strings.TrimPrefix(p, "/")
	if hidden != "" && (p == hidden || strings.HasPrefix(p, hidden+"/")) {
		return "", fs.ErrNotExist
	}
	// What Resolve named exists, all of it, with no symlink left.
	fd, err := r.OpenFd(p, unix.O_PATH, 0, inroot.NoSymlinks)
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return "", fs.ErrNotExist
	} else if err != nil {
		return "", err
	}
	unix.Close(fd)
	return p, nil
}

// readIn reads the file rel resolves to in base.
func readIn(base, rel, hidden string) ([]byte, error) {
	r, err := inroot.Open(base)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p, err := resolveIn(r, rel, hidden)
	if err != nil {
		return nil, err
	}
	f, err := r.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
