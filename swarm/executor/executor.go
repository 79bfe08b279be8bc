// Package executor is hutch-swarm's SwarmKit executor: each task of a
// service becomes an ordinary hutch container, created, started, waited
// for, stopped and removed through the engine's Docker API, with the
// names and labels Docker's own executor gives them. SwarmKit's agent
// drives the controllers; the orchestrators above it make replacements.
package executor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/agent"
	"github.com/moby/swarmkit/v2/agent/exec"
	"github.com/moby/swarmkit/v2/api"
)

// Executor runs tasks as containers of the engine at the other end of
// Client.
type Executor struct {
	client *client.Client
	// secrets and configs hold what the dispatcher sent for this node's
	// tasks; a controller writes the ones its task references.
	deps exec.DependencyManager
	// files is where secret and config files are written for the
	// containers that mount them.
	files string
}

// New returns an executor driving the engine through c; files is a
// directory private to hutch-swarm for secret and config files.
func New(c *client.Client, files string) *Executor {
	return &Executor{client: c, deps: agent.NewDependencyManager(nil), files: files}
}

var _ exec.Executor = (*Executor)(nil)

// Describe tells the managers what this node is: SwarmKit's scheduler
// matches constraints and platforms against it. It asks the engine for
// its version alone: the engine's /info asks hutch-swarm in turn.
func (e *Executor) Describe(ctx context.Context) (*api.NodeDescription, error) {
	v, err := e.client.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return nil, fmt.Errorf("describe node: %w", err)
	}
	hostname, _ := os.Hostname()
	d := &api.NodeDescription{
		Hostname: hostname,
		Platform: &api.Platform{Architecture: archName(runtime.GOARCH), OS: runtime.GOOS},
		Resources: &api.Resources{
			NanoCPUs:    int64(runtime.NumCPU()) * 1e9,
			MemoryBytes: memTotal(),
		},
		Engine: &api.EngineDescription{
			EngineVersion: v.Version,
			Plugins:       enginePlugins(),
		},
	}
	return d, nil
}

// archName is the architecture as Docker's nodes report it (uname's).
func archName(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return goarch
}

// memTotal is the host's memory from /proc/meminfo, 0 if unreadable.
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// enginePlugins are the drivers the engine has, as the scheduler's plugin
// filter asks for them by type and name.
func enginePlugins() []api.PluginDescription {
	var ps []api.PluginDescription
	for _, v := range []string{"local"} {
		ps = append(ps, api.PluginDescription{Type: "Volume", Name: v})
	}
	for _, n := range []string{"bridge", "host", "null"} {
		ps = append(ps, api.PluginDescription{Type: "Network", Name: n})
	}
	for _, l := range []string{"json-file", "local", "none"} {
		ps = append(ps, api.PluginDescription{Type: "Log", Name: l})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Type+ps[i].Name < ps[j].Type+ps[j].Name })
	return ps
}

// Configure is called with the node's record; hutch needs nothing of it.
func (e *Executor) Configure(context.Context, *api.Node) error { return nil }

// Controller returns the controller of one task; only container tasks
// exist here.
func (e *Executor) Controller(t *api.Task) (exec.Controller, error) {
	if t.Spec.GetContainer() == nil {
		return nil, fmt.Errorf("task %s: only container tasks are supported", t.ID)
	}
	return newController(e, t), nil
}

// SetNetworkBootstrapKeys receives the overlay networks' keys; hutch has
// no overlay networks.
func (e *Executor) SetNetworkBootstrapKeys([]*api.EncryptionKey) error { return nil }

// Secrets and Configs hand the agent the stores of what its tasks use
// (exec.SecretsProvider, exec.ConfigsProvider).
func (e *Executor) Secrets() exec.SecretsManager { return e.deps.Secrets() }

// Configs is the store of the configs this node's tasks use.
func (e *Executor) Configs() exec.ConfigsManager { return e.deps.Configs() }

// Volumes: cluster (CSI) volumes are not supported; the store stays empty.
func (e *Executor) Volumes() exec.VolumesManager { return e.deps.Volumes() }
