package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin/opaque"
)

// BinaryName is the keeper's program (hutch-keeper, C, linked
// statically): hutch-ns finds it beside itself or on PATH.
const BinaryName = "hutch-keeper"

// Options is what the keeper is started with (Command).
type Options struct {
	// StateDir is the daemon's state dir, where keeper.sock is.
	StateDir string
	// Reply is what every lease carries: the keeper's pid and the
	// environment of the namespaces (rootless.InsideEnv).
	Reply Reply
	// Parent is the pid of the namespaces' parent (hutch-ns): the keeper
	// dies with it, and its other children (slirp4netns) do not keep
	// the keeper.
	Parent int
	// NetNS is the detached network namespace the port driver's child
	// side dials in, "" when there is none (and no port driver).
	NetNS string
	// Port is what rootlesskit's builtin port driver tells its child
	// side (ParentInitPortDriverCompleted's PortDriverOpaque).
	Port map[string]string
	// Poll is how often the keeper looks for processes in its user
	// namespace while no engine holds a lease (0: 250 ms).
	Poll  time.Duration
	Debug bool
}

// Command is the keeper's command line, bin its path. The keeper hands
// its user and mount namespaces to engines on the state dir's
// keeper.sock (this package's protocol), serves the builtin port
// driver's child side in NetNS, and exits once no engine holds a lease
// and no process but its own and its parent's lives in its user
// namespace.
func Command(bin string, o Options) ([]string, error) {
	reply, err := json.Marshal(o.Reply)
	if err != nil {
		return nil, err
	}
	if o.Parent <= 0 {
		return nil, errors.New("keeper: no parent pid")
	}
	args := []string{bin, "-s", filepath.Join(o.StateDir, SocketName), "-r", string(reply), "-P", strconv.Itoa(o.Parent)}
	if o.NetNS != "" {
		sock, ready := o.Port[opaque.SocketPath], o.Port[opaque.ChildReadyPipePath]
		if sock == "" || ready == "" {
			return nil, fmt.Errorf("keeper: the port driver named no socket or ready pipe (%v)", o.Port)
		}
		args = append(args, "-n", o.NetNS, "-p", sock, "-y", ready)
		if o.Port[opaque.SourceIPTransparent] == "true" {
			backend := o.Port[opaque.SourceIPTransparentBackend]
			if backend == "" {
				backend = "auto"
			}
			args = append(args, "-t", backend)
		}
	}
	if o.Poll > 0 {
		args = append(args, "-i", strconv.FormatInt(max(o.Poll.Milliseconds(), 1), 10))
	}
	if o.Debug {
		args = append(args, "-d")
	}
	return args, nil
}
