package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/plugin"

	"github.com/moby/moby/api/types/swarm"

	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine/container"
	swarmproxy "github.com/hutch-engine/hutch/swarm/proxy"
)

// Swarm mode lives in hutch-swarm (docs/swarm.md): the engine forwards the
// swarm endpoints to it while it runs, and starts it for swarm init and
// join. Outside any swarm these endpoints answer as dockerd does on a node
// outside any swarm, and the plugin endpoints as dockerd with no plugin
// installed, so that clients get Docker's statuses and messages (moby's
// daemon/cluster and daemon/pkg/plugin) rather than "page not found".
var (
	errNotSwarmManager = errdefs.ErrUnavailable.WithMessage(`This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.`)
	errNotInSwarm      = errdefs.ErrUnavailable.WithMessage("This node is not part of a swarm")
	// An engine without hutch-swarm cannot create or join a swarm.
	errNoSwarmMode = errdefs.ErrNotImplemented.WithMessage("swarm mode is not available: hutch-swarm was not found beside the hutch binary or on PATH")
	// dockerd would fetch or build a plugin here; hutch cannot.
	errNoPlugins = errdefs.ErrNotImplemented.WithMessage("hutch does not support plugins")
)

// notSwarmManager serves every endpoint of swarm's objects (nodes, services,
// tasks, secrets, configs) and of the swarm itself but init, join and leave.
func notSwarmManager(http.ResponseWriter, *http.Request) error { return errNotSwarmManager }

func swarmLeave(http.ResponseWriter, *http.Request) error { return errNotInSwarm }

func swarmUnsupported(http.ResponseWriter, *http.Request) error { return errNoSwarmMode }

// Swarm is the engine's way to hutch-swarm.
type Swarm interface {
	// Forward serves a swarm request; an error wrapping
	// swarmproxy.ErrNotRunning says no node runs and the request starts
	// none: the engine answers it as a node outside any swarm.
	Forward(w http.ResponseWriter, r *http.Request) error
	// Info is /info's Swarm section; Status the same without the
	// cluster's counts, for /_ping.
	Info(ctx context.Context) swarm.Info
	Status(ctx context.Context) swarm.Info
	// RemoveNetwork removes a network made for the swarm (SwarmScopeLabel).
	RemoveNetwork(ctx context.Context, id string) error
}

// swarmRoute forwards a swarm endpoint to hutch-swarm, or answers with
// outside, as a node outside any swarm does.
func (s *Server) swarmRoute(outside apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.swarm == nil {
			return outside(w, r)
		}
		err := s.swarm.Forward(w, r)
		if errors.Is(err, swarmproxy.ErrNotRunning) {
			return outside(w, r)
		}
		return err
	}
}

// swarmInfo is the Swarm section of /info.
func (s *Server) swarmInfo(ctx context.Context) swarm.Info {
	if s.swarm == nil {
		return swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive}
	}
	return s.swarm.Info(ctx)
}

// swarmHeader is /_ping's Swarm header as Docker sends it: "inactive",
// "pending", "error", "locked", or "active/manager" and "active/worker".
func (s *Server) swarmHeader(ctx context.Context) string {
	if s.swarm == nil {
		return string(swarm.LocalNodeStateInactive)
	}
	st := s.swarm.Status(ctx)
	if st.LocalNodeState != swarm.LocalNodeStateActive {
		return string(st.LocalNodeState)
	}
	if st.ControlAvailable {
		return "active/manager"
	}
	return "active/worker"
}

// SwarmScopeLabel marks an engine network made for a swarm-scoped
// (overlay) network's create.
const SwarmScopeLabel = "com.hutch.swarm.scope"

// swarmScoped turns the create of an overlay network, on a node of a
// swarm of one node, into that of a bridge network of this engine, which
// services attach to (docs/swarm.md): docker stack deploy makes its
// networks so. A rootless engine cannot make overlay networks, which
// span nodes; in a swarm of several nodes they are refused.
func (s *Server) swarmScoped(ctx context.Context, req *network.CreateRequest) error {
	if req.Driver != "overlay" {
		return nil
	}
	st := s.swarmInfo(ctx)
	if st.LocalNodeState != swarm.LocalNodeStateActive {
		return errdefs.ErrNotImplemented.WithMessage(`network driver "overlay" is not supported: hutch makes bridge networks (overlay networks need a swarm; use "docker swarm init")`)
	}
	if st.Nodes > 1 || !st.ControlAvailable {
		return errdefs.ErrNotImplemented.WithMessage("overlay networks span a swarm's nodes, which needs kernel features (VXLAN in the host's network namespace) a rootless engine does not have: create a bridge network of the same name on each node (docker network create NAME) and attach services to it; their tasks reach each other on one node")
	}
	if req.Ingress {
		return errdefs.ErrNotImplemented.WithMessage("hutch's rootless swarm mode has no ingress network: publish ports with mode=host")
	}
	req.Driver, req.Scope = "bridge", ""
	req.Options = nil
	labels := map[string]string{SwarmScopeLabel: "swarm"}
	for k, v := range req.Labels {
		labels[k] = v
	}
	req.Labels = labels
	return nil
}

func pluginsUnsupported(http.ResponseWriter, *http.Request) error { return errNoPlugins }

// since gates h on the API version its route appeared in, with dockerd's
// message (its router.WithMinimumAPIVersion), which names the route pattern.
func since(minVersion string, h apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if versionLess(APIVersion(r.Context()), minVersion) {
			return tooOldFor(r.Pattern, minVersion)
		}
		return h(w, r)
	}
}

func tooOldFor(route, minVersion string) error {
	return errdefs.ErrInvalidArgument.WithMessage(route + " requires minimum API version " + minVersion)
}

// pluginKeys are the filters dockerd's plugin list accepts.
var pluginKeys = map[string]bool{"enabled": true, "capability": true}

// pluginList is GET /plugins: the filters are checked as dockerd checks
// them, and the list is empty.
func pluginList(w http.ResponseWriter, r *http.Request) error {
	f, err := container.ParseFiltersOf(r.URL.Query().Get("filters"), pluginKeys)
	if err != nil {
		return err
	}
	if vs, ok := f["enabled"]; ok && (vs["true"] || vs["1"]) == (vs["false"] || vs["0"]) {
		values := make([]string, 0, len(vs))
		for v := range vs {
			values = append(values, v)
		}
		sort.Strings(values)
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid filter 'enabled=%s'", values))
	}
	return writeJSON(w, http.StatusOK, plugin.ListResponse{})
}

// pluginRoute serves /plugins/{name}/… where the name holds slashes and a
// tag (vieux/sshfs:latest): it dispatches on the last segment, as
// imageRoute does. No plugin exists, so every known operation is a 404.
func pluginRoute(w http.ResponseWriter, r *http.Request) error {
	rest := r.PathValue("rest")
	if r.Method == http.MethodDelete {
		return noSuchPlugin(rest)
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		notFound(w, r)
		return nil
	}
	name := rest[:i]
	switch r.Method + " " + rest[i+1:] {
	case "GET json", "POST disable", "POST push", "POST set":
		return noSuchPlugin(name)
	case "POST enable":
		// dockerd reads the timeout before it looks the plugin up.
		if _, err := strconv.Atoi(r.URL.Query().Get("timeout")); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage(err.Error())
		}
		return noSuchPlugin(name)
	case "POST upgrade":
		if versionLess(APIVersion(r.Context()), "1.26") {
			return tooOldFor("POST /plugins/{name:.*}/upgrade", "1.26")
		}
		return noSuchPlugin(name)
	}
	notFound(w, r)
	return nil
}

// noSuchPlugin is dockerd's answer for a plugin name, tag or ID it does not
// have.
func noSuchPlugin(name string) error {
	return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("plugin %q not found", name))
}
