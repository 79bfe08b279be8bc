package volume

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// Volume is one volume as the store keeps it.
type Volume struct {
	Name      string
	CreatedAt time.Time
	Labels    map[string]string `json:",omitempty"`
	// Anonymous volumes are made for one container (-v /path, the
	// image's VOLUME) and go with it on `docker rm -v` and --rm.
	Anonymous bool `json:",omitempty"`
	// Options are the local driver's (type, o, device): a bind of a
	// directory or a tmpfs (see CheckOptions).
	Options map[string]string `json:",omitempty"`
	// Mountpoint is the volume's own directory (not stored).
	Mountpoint string `json:"-"`
}

// Source is the directory containers mount: the bound device of a bind
// volume, else the volume's own directory.
func (v *Volume) Source() string {
	if dev := v.Options["device"]; dev != "" && isBind(v.Options) {
		return dev
	}
	return v.Mountpoint
}

// isBind tells whether local driver options ask for a bind (o holds
// "bind" or "rbind").
func isBind(opts map[string]string) bool {
	for _, o := range strings.Split(opts["o"], ",") {
		if o == "bind" || o == "rbind" {
			return true
		}
	}
	return false
}

// CheckOptions accepts the local driver's options hutch can honour: a
// bind of an existing host directory (type none or empty, o bind or
// rbind, device absolute), as compose's driver_opts bind a project
// directory, and a tmpfs (type tmpfs, any device, o its mount options),
// mounted while containers use the volume. Unknown keys are invalid
// (Docker's words); other types (nfs, cifs, devices) are not implemented.
func CheckOptions(opts map[string]string) error {
	if len(opts) == 0 {
		return nil
	}
	for k := range opts {
		switch k {
		case "type", "o", "device", "size", "copy":
		default:
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid option: %q", k))
		}
	}
	if opts["type"] == "tmpfs" {
		if opts["device"] == "" {
			return errdefs.ErrInvalidArgument.WithMessage(`missing required option: "device"`)
		}
		_, _, err := tmpfsOptions(opts["o"])
		return err
	}
	if t := opts["type"]; (t != "" && t != "none") || !isBind(opts) {
		return errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("local volume options type=%q o=%q: only binds of a directory (type=none, o=bind, device=/path) and tmpfs (type=tmpfs, device=tmpfs) are supported", opts["type"], opts["o"]))
	}
	dev := opts["device"]
	if dev == "" || !filepath.IsAbs(dev) {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("local volume bind: device %q must be an absolute path", dev))
	}
	return nil
}

// Store keeps volumes under one root directory.
type Store struct {
	root string
	mu   sync.Mutex // serialises Create and Remove

	mountMu sync.Mutex
	users   map[string]int // tmpfs volume name → containers using its mount
}

const (
	dataDir  = "_data"
	metaFile = "volume.json"
	// Scratch entries in the root start with a dot, which no volume
	// name can: volumes being made and being removed.
	newPrefix  = ".new-"
	gonePrefix = ".gone-"
)

// Open opens the store at root, making it if needed, and removes what an
// interrupted Create or Remove left.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			if err := os.RemoveAll(filepath.Join(root, de.Name())); err != nil {
				return nil, fmt.Errorf("removing the remains of an interrupted volume operation: %w", err)
			}
		}
	}
	return &Store{root: root, users: map[string]int{}}, nil
}

// ValidName reports whether name is a valid local volume name, by
// Docker's rule: [a-zA-Z0-9][a-zA-Z0-9_.-]+.
func ValidName(name string) bool {
	if len(name) < 2 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func invalidName(name string) error {
	return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("create %s: %q includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path", name, name))
}

func notFound(name string) error {
	return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("get %s: no such volume", name))
}

// Create makes the volume name with labels and the local driver's
// options (checked by CheckOptions first), or, when it exists, returns it
// as it is (created false), as Docker does. An empty name makes an
// anonymous volume with a random one.
func (s *Store) Create(name string, labels, opts map[string]string, anonymous bool) (v *Volume, created bool, err error) {
	if err := CheckOptions(opts); err != nil {
		return nil, false, err
	}
	if name == "" {
		b := make([]byte, 32)
		rand.Read(b)
		name = hex.EncodeToString(b)
	} else if !ValidName(name) {
		return nil, false, invalidName(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, err := s.Get(name); err == nil || !errdefs.IsNotFound(err) {
		return v, false, err
	}
	tmp, err := os.MkdirTemp(s.root, newPrefix)
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Mkdir(filepath.Join(tmp, dataDir), 0o755); err != nil {
		return nil, false, err
	}
	v = &Volume{Name: name, CreatedAt: time.Now().UTC().Truncate(time.Second), Labels: labels, Anonymous: anonymous, Options: opts}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false, err
	}
	if err := atomicfile.Write(filepath.Join(tmp, metaFile), b, 0o600, true); err != nil {
		return nil, false, err
	}
	if err := os.Rename(tmp, filepath.Join(s.root, name)); err != nil {
		return nil, false, fmt.Errorf("create %s: %w", name, err)
	}
	v.Mountpoint = s.mountpoint(name)
	return v, true, nil
}

func (s *Store) mountpoint(name string) string {
	return filepath.Join(s.root, name, dataDir)
}

// Get returns the volume name, or an errdefs.ErrNotFound in Docker's words.
func (s *Store) Get(name string) (*Volume, error) {
	if !ValidName(name) {
		return nil, notFound(name)
	}
	b, err := os.ReadFile(filepath.Join(s.root, name, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(name)
	} else if err != nil {
		return nil, err
	}
	var v Volume
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("volume %s: %s: %w", name, metaFile, err)
	}
	v.Name = name
	v.Mountpoint = s.mountpoint(name)
	return &v, nil
}

// List returns every volume, by name.
func (s *Store) List() ([]*Volume, error) {
	des, err := os.ReadDir(s.root)
	if err != nil {
		return nil, err
	}
	var out []*Volume
	for _, de := range des {
		if !de.IsDir() || !ValidName(de.Name()) {
			continue
		}
		v, err := s.Get(de.Name())
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		} else if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *Volume) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Remove removes the volume name and its data. Whether it is in use is
// the caller's to check.
func (s *Store) Remove(name string) error {
	if !ValidName(name) {
		return notFound(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.root, name)
	if _, err := os.Stat(filepath.Join(dir, metaFile)); errors.Is(err, fs.ErrNotExist) {
		return notFound(name)
	}
	gone, err := os.MkdirTemp(s.root, gonePrefix)
	if err != nil {
		return err
	}
	// Renamed over the empty scratch directory (rename(2) itself: Go's
	// refuses a directory as the target): from here the name is free, and
	// what is left is Open's to clear if the removal stops.
	if err := unix.Rename(dir, gone); err != nil {
		os.Remove(gone)
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return os.RemoveAll(gone)
}

// Size is the bytes of the files in the volume name.
func (s *Store) Size(name string) (int64, error) {
	var n int64
	err := filepath.WalkDir(s.mountpoint(name), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}
