package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/containerd/errdefs"
	swarmproxy "github.com/hutch-engine/hutch/swarm/proxy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// NetworkBackend is the network half of the engine.
type NetworkBackend interface {
	NetworkCreate(ctx context.Context, req network.CreateRequest) (network.CreateResponse, error)
	NetworkInspect(ctx context.Context, ref string) (network.Inspect, error)
	NetworkList(ctx context.Context, filters string) ([]network.Summary, error)
	NetworkRemove(ctx context.Context, ref string) error
	NetworkPrune(ctx context.Context, filters string) (network.PruneReport, error)
	NetworkConnect(ctx context.Context, ref string, req network.ConnectRequest) error
	NetworkDisconnect(ctx context.Context, ref string, req network.DisconnectRequest) error
}

func (s *Server) networkCreate(w http.ResponseWriter, r *http.Request) error {
	var req network.CreateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if versionLess(APIVersion(r.Context()), "1.48") {
		// EnableIPv4 came with API 1.48: Docker ignores it before.
		req.EnableIPv4 = nil
	}
	if err := s.swarmScoped(r.Context(), &req); err != nil {
		return err
	}
	resp, err := s.backend.NetworkCreate(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, resp)
}

func (s *Server) networkList(w http.ResponseWriter, r *http.Request) error {
	list, err := s.backend.NetworkList(r.Context(), r.URL.Query().Get("filters"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) networkInspect(w http.ResponseWriter, r *http.Request) error {
	// verbose only adds swarm services, which hutch has none of; a value
	// that is not a boolean is still refused, as Docker does.
	if v := r.URL.Query().Get("verbose"); v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			return errdefs.ErrInvalidArgument.WithMessage("invalid value for verbose: " + v)
		}
	}
	n, err := s.backend.NetworkInspect(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if versionLess(APIVersion(r.Context()), "1.52") {
		n.Status = nil // the IPAM counts came with API 1.52
	}
	return writeJSON(w, http.StatusOK, n)
}

func (s *Server) networkRemove(w http.ResponseWriter, r *http.Request) error {
	// A network made for the swarm is hutch-swarm's to remove: it refuses
	// while a service uses it and waits for the tasks that are stopping.
	if s.swarm != nil && r.Header.Get(swarmproxy.EngineHeader) == "" {
		if n, err := s.backend.NetworkInspect(r.Context(), r.PathValue("id")); err == nil && n.Labels[SwarmScopeLabel] != "" {
			err := s.swarm.RemoveNetwork(r.Context(), n.ID)
			if err == nil {
				w.WriteHeader(http.StatusNoContent)
				return nil
			}
			if !errors.Is(err, swarmproxy.ErrNotRunning) {
				return err
			}
		}
	}
	if err := s.backend.NetworkRemove(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) networkConnect(w http.ResponseWriter, r *http.Request) error {
	var req network.ConnectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.backend.NetworkConnect(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) networkDisconnect(w http.ResponseWriter, r *http.Request) error {
	var req network.DisconnectRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.backend.NetworkDisconnect(r.Context(), r.PathValue("id"), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) networkPrune(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.backend.NetworkPrune(r.Context(), r.URL.Query().Get("filters"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}

// legacyNetworkSettings are NetworkSettings as API versions before 1.52
// show them: with the default bridge network's endpoint also at the top
// level (`docker inspect -f '{{.NetworkSettings.IPAddress}}'` reads it).
type legacyNetworkSettings struct {
	containertypes.NetworkSettings
	Bridge                 string
	HairpinMode            bool
	LinkLocalIPv6Address   string
	LinkLocalIPv6PrefixLen int
	SecondaryIPAddresses   []string
	SecondaryIPv6Addresses []string
	EndpointID             string
	Gateway                string
	GlobalIPv6Address      string
	GlobalIPv6PrefixLen    int
	IPAddress              string
	IPPrefixLen            int
	IPv6Gateway            string
	MacAddress             string
}

// legacyInspect shadows InspectResponse.NetworkSettings.
type legacyInspect struct {
	containertypes.InspectResponse
	NetworkSettings *legacyNetworkSettings
}

// inspectForVersion is what GET /containers/{id}/json sends for the
// request's API version.
func inspectForVersion(r *http.Request, c containertypes.InspectResponse) any {
	if !versionLess(APIVersion(r.Context()), "1.52") || c.NetworkSettings == nil {
		return c
	}
	ns := &legacyNetworkSettings{NetworkSettings: *c.NetworkSettings}
	if ep := c.NetworkSettings.Networks[network.NetworkBridge]; ep != nil {
		ns.EndpointID = ep.EndpointID
		ns.IPPrefixLen = ep.IPPrefixLen
		ns.GlobalIPv6PrefixLen = ep.GlobalIPv6PrefixLen
		ns.MacAddress = ep.MacAddress.String()
		ns.Gateway = addrString(ep.Gateway.IsValid(), ep.Gateway.String())
		ns.IPAddress = addrString(ep.IPAddress.IsValid(), ep.IPAddress.String())
		ns.IPv6Gateway = addrString(ep.IPv6Gateway.IsValid(), ep.IPv6Gateway.String())
		ns.GlobalIPv6Address = addrString(ep.GlobalIPv6Address.IsValid(), ep.GlobalIPv6Address.String())
	}
	return legacyInspect{InspectResponse: c, NetworkSettings: ns}
}

func addrString(valid bool, s string) string {
	if !valid {
		return ""
	}
	return s
}
