package container

import (
	"cmp"
	"maps"
	"slices"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/storage"
)

// formatTime is how inspect shows times; the zero time becomes
// "0001-01-01T00:00:00Z", as in Docker.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Inspect is GET /containers/{id}/json for c. Like dockerd it shows the
// image ID as Image (the user's reference is Config.Image), the empty list
// for Args and Mounts, {} for NetworkSettings.Ports and .Networks, and null
// for ExecIDs; the engine adds what this record does not know (ExecIDs,
// GraphDriver.Data, sizes). The result shares Config and HostConfig with c.
func (c *Container) Inspect() containertypes.InspectResponse {
	cfg := c.Config
	if cfg == nil {
		cfg = &containertypes.Config{}
	}
	hc := c.HostConfig
	if hc == nil {
		hc = &containertypes.HostConfig{}
	}
	st := c.State
	resp := containertypes.InspectResponse{
		ID:      c.ID,
		Created: formatTime(c.Created),
		Path:    c.Path,
		Args:    nonNil(c.Args),
		State: &containertypes.State{
			Status:     containertypes.ContainerState(st.Effective()),
			Running:    st.Running(),
			Paused:     st.Paused(),
			Restarting: st.Status == StatusRestarting,
			OOMKilled:  st.OOMKilled,
			Dead:       st.Status == StatusDead,
			Pid:        st.Pid,
			ExitCode:   st.ExitCode,
			Error:      st.Error,
			StartedAt:  formatTime(st.StartedAt),
			FinishedAt: formatTime(st.FinishedAt),
			Health:     st.Health,
		},
		Image:          c.ImageID,
		ResolvConfPath: c.ResolvConfPath,
		HostnamePath:   c.HostnamePath,
		HostsPath:      c.HostsPath,
		LogPath:        c.LogPath,
		Name:           c.Name,
		RestartCount:   c.RestartCount,
		Driver:         c.Driver,
		Platform:       "linux",
		HostConfig:     hc,
		GraphDriver:    &storage.DriverData{Name: c.Driver},
		Mounts:         nonNil(c.Mounts),
		Config:         cfg,
		NetworkSettings: &containertypes.NetworkSettings{
			Ports:    network.PortMap{},
			Networks: map[string]*network.EndpointSettings{},
		},
	}
	if ns := c.NetworkSettings; ns != nil {
		resp.NetworkSettings.SandboxID = ns.SandboxID
		resp.NetworkSettings.SandboxKey = ns.SandboxKey
		maps.Copy(resp.NetworkSettings.Ports, ns.Ports)
		for name, ep := range ns.Networks {
			if ep != nil {
				resp.NetworkSettings.Networks[name] = ep.Copy()
			}
		}
	}
	return resp
}

// Summary is c's entry in GET /containers/json, with the Status text as of
// now.
func (c *Container) Summary() containertypes.Summary { return c.SummaryAt(time.Now()) }

// SummaryAt is Summary with the Status text as of now. Like dockerd it
// gives [] rather than null for Names, Ports and Mounts, {} for Labels and
// NetworkSettings.Networks, and the health check's status and failing
// streak ("none" without one; API versions before 1.52 drop the field).
// Image is the reference the user
// gave: dockerd shows the image ID instead once that reference points to
// another image, which only the image service can tell.
func (c *Container) SummaryAt(now time.Time) containertypes.Summary {
	s := containertypes.Summary{
		ID:      c.ID,
		Names:   []string{},
		Image:   c.Image,
		ImageID: c.ImageID,
		Command: c.Command(),
		Created: c.Created.Unix(),
		Ports:   c.ports(),
		Labels:  maps.Clone(c.labels()),
		State:   containertypes.ContainerState(c.State.Effective()),
		Status:  c.State.Describe(now),
		Health:  &containertypes.HealthSummary{Status: containertypes.NoHealthcheck},
		NetworkSettings: &containertypes.NetworkSettingsSummary{
			Networks: map[string]*network.EndpointSettings{},
		},
		Mounts: nonNil(slices.Clone(c.Mounts)),
	}
	if h := c.State.Health; h != nil && h.Status != "" {
		s.Health = &containertypes.HealthSummary{Status: h.Status, FailingStreak: h.FailingStreak}
	}
	if c.Name != "" {
		s.Names = []string{c.Name}
	}
	if s.Image == "" && c.Config != nil {
		s.Image = c.Config.Image
	}
	if s.Image == "" {
		s.Image = c.ImageID
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if c.HostConfig != nil {
		s.HostConfig.NetworkMode = string(c.HostConfig.NetworkMode)
		s.HostConfig.Annotations = maps.Clone(c.HostConfig.Annotations)
	}
	if c.NetworkSettings != nil {
		for name, ep := range c.NetworkSettings.Networks {
			if ep != nil {
				s.NetworkSettings.Networks[name] = summaryEndpoint(ep)
			}
		}
	}
	return s
}

// summaryEndpoint keeps the operational fields dockerd lists; the
// configuration ones (aliases, links, driver options) stay null.
func summaryEndpoint(ep *network.EndpointSettings) *network.EndpointSettings {
	out := &network.EndpointSettings{
		NetworkID:           ep.NetworkID,
		EndpointID:          ep.EndpointID,
		Gateway:             ep.Gateway,
		IPAddress:           ep.IPAddress,
		IPPrefixLen:         ep.IPPrefixLen,
		IPv6Gateway:         ep.IPv6Gateway,
		GlobalIPv6Address:   ep.GlobalIPv6Address,
		GlobalIPv6PrefixLen: ep.GlobalIPv6PrefixLen,
		MacAddress:          ep.MacAddress,
		GwPriority:          ep.GwPriority,
	}
	if ep.IPAMConfig != nil {
		out.IPAMConfig = &network.EndpointIPAMConfig{
			IPv4Address: ep.IPAMConfig.IPv4Address,
			IPv6Address: ep.IPAMConfig.IPv6Address,
		}
	}
	return out
}

// labels are the container's labels (never nil-checked by callers).
func (c *Container) labels() map[string]string {
	if c.Config == nil {
		return nil
	}
	return c.Config.Labels
}

func (c *Container) annotations() map[string]string {
	if c.HostConfig == nil {
		return nil
	}
	return c.HostConfig.Annotations
}

// ports lists c's exposed and published ports as docker ps shows them, in
// a stable order (dockerd's follows map iteration).
func (c *Container) ports() []containertypes.PortSummary {
	out := []containertypes.PortSummary{}
	if c.NetworkSettings == nil {
		return out
	}
	for p, bindings := range c.NetworkSettings.Ports {
		if len(bindings) == 0 {
			out = append(out, containertypes.PortSummary{PrivatePort: p.Num(), Type: string(p.Proto())})
			continue
		}
		for _, b := range bindings {
			hp, err := network.ParsePortRange(b.HostPort)
			if err != nil {
				continue // dockerd skips what it cannot read, too
			}
			out = append(out, containertypes.PortSummary{
				PrivatePort: p.Num(), PublicPort: hp.Start(), Type: string(p.Proto()), IP: b.HostIP,
			})
		}
	}
	slices.SortFunc(out, func(a, b containertypes.PortSummary) int {
		return cmp.Or(cmp.Compare(a.PrivatePort, b.PrivatePort), cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.PublicPort, b.PublicPort), a.IP.Compare(b.IP))
	})
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
