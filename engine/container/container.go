package container

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

// Container is one container's record: everything Docker's inspect and list
// show, plus the paths the runtime side needs to find the container again
// after the daemon restarts. It is persisted as JSON; field names follow
// dockerd's own config.v2.json where Docker has one.
//
// Values handed out by a Store are copies: changing one changes nothing
// until it goes back through Store.Update.
type Container struct {
	// ID is 64 lowercase hex characters (NewID).
	ID string
	// Name is unique among containers and starts with "/", as in Docker.
	Name    string
	Created time.Time
	// Path and Args are the command the container runs (entrypoint and
	// arguments after merging the image config with the request).
	Path string
	Args []string

	Config     *containertypes.Config
	HostConfig *containertypes.HostConfig

	// ImageID is the image the container was created from ("sha256:…").
	ImageID string
	// Image is the reference the user gave (e.g. "busybox"), what
	// docker ps shows.
	Image string

	State        State
	RestartCount int
	// ManuallyStopped is set when a stop or kill through the API ended
	// the last run: the restart policy then leaves the container stopped
	// (unless-stopped, also across the daemon's restarts). A start clears
	// it. Docker's HasBeenManuallyStopped.
	ManuallyStopped bool `json:",omitempty"`

	// LogPath is the json-file log the shim writes.
	LogPath string
	// ResolvConfPath, HostnamePath and HostsPath are the files bind-mounted
	// into the container.
	ResolvConfPath string `json:",omitempty"`
	HostnamePath   string `json:",omitempty"`
	HostsPath      string `json:",omitempty"`
	// Driver is the storage driver holding the rootfs (overlay, vfs…).
	Driver string `json:",omitempty"`

	// Mounts are the container's bind and volume mounts, as inspect shows
	// them.
	Mounts []containertypes.MountPoint `json:",omitempty"`
	// NetworkSettings is what the network side attached (endpoints, ports).
	NetworkSettings *containertypes.NetworkSettings `json:",omitempty"`

	Runtime Runtime
}

// Runtime holds what the runtime side (storage and shim) needs to find a
// container's pieces again, and that Docker does not show. The engine fills
// it; this package only stores it. Extra is for anything else a later
// component needs to keep, so that it does not have to change this type.
type Runtime struct {
	// RootfsID is the containers/storage container holding the rootfs.
	RootfsID string `json:",omitempty"`
	// BundleDir holds the OCI spec (config.json) and the shim's files.
	BundleDir string `json:",omitempty"`
	// ShimSocket is where the container's shim listens while it runs.
	ShimSocket string `json:",omitempty"`
	// ExitFile is where the shim records the exit status before it exits.
	ExitFile string `json:",omitempty"`
	// Inherited are the destinations of the mount points --volumes-from
	// copied from other containers (in Mounts with the others).
	Inherited []string `json:",omitempty"`
	// Extra is free-form state, keyed by the component that owns it.
	Extra map[string]string `json:",omitempty"`
}

// ExitInfo is how a run ended, as the shim recorded it.
type ExitInfo struct {
	// Code is the exit code; death by signal N is 128+N, as in Docker.
	Code int
	// FinishedAt is when the process ended; zero means now.
	FinishedAt time.Time
	OOMKilled  bool
	// Error explains an end the process did not choose (empty otherwise).
	Error string
}

// NewID returns a random container ID: 64 hex characters whose first 12
// (the short ID) are never all digits, as Docker does, so that a short ID
// is never mistaken for a number by clients and scripts.
func NewID() string {
	for {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			// crypto/rand does not fail on Linux; if it does, nothing
			// sensible can be done with a predictable ID.
			panic(fmt.Sprintf("container: reading random bytes: %v", err))
		}
		id := hex.EncodeToString(b[:])
		if _, err := strconv.ParseInt(id[:12], 10, 64); err != nil {
			return id
		}
	}
}

// ShortID is the 12-character form docker ps shows.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// validID reports whether id has the form NewID gives.
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func checkID(id string) error {
	if !validID(id) {
		return fmt.Errorf("invalid container ID %q: want 64 lowercase hex characters: %w", id, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Command is the command line docker ps shows: Path followed by Args,
// arguments containing a space in single quotes.
func (c *Container) Command() string {
	if len(c.Args) == 0 {
		return c.Path
	}
	var b strings.Builder
	b.WriteString(c.Path)
	for _, a := range c.Args {
		b.WriteByte(' ')
		if strings.Contains(a, " ") {
			b.WriteString("'" + a + "'")
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// Clone returns a deep copy of c. The copy is made by reflection
// (deepCopy), so it cannot miss a field that a hand-written copy would
// forget when the API types grow.
func (c *Container) Clone() *Container { return deepCopy(c) }

func decode(data []byte) (*Container, error) {
	var c Container
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}
