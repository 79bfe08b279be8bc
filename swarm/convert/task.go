package convert

import (
	"strings"

	gogotypes "github.com/gogo/protobuf/types"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"
)

// TaskSpecToGRPC converts a task template; only container tasks exist.
func TaskSpecToGRPC(t swarm.TaskSpec) (api.TaskSpec, error) {
	if t.PluginSpec != nil || t.NetworkAttachmentSpec != nil || (t.Runtime != "" && t.Runtime != swarm.RuntimeContainer) {
		return api.TaskSpec{}, invalid("hutch's swarm mode runs container tasks only")
	}
	if t.ContainerSpec == nil {
		return api.TaskSpec{}, invalid("ContainerSpec: must be provided")
	}
	cs, err := containerSpecToGRPC(t.ContainerSpec)
	if err != nil {
		return api.TaskSpec{}, err
	}
	out := api.TaskSpec{Runtime: &api.TaskSpec_Container{Container: cs}, ForceUpdate: t.ForceUpdate}
	if r := t.Resources; r != nil {
		out.Resources = &api.ResourceRequirements{}
		if r.Limits != nil {
			out.Resources.Limits = &api.Resources{NanoCPUs: r.Limits.NanoCPUs, MemoryBytes: r.Limits.MemoryBytes}
			// SwarmKit keeps the pids limit in the container's spec.
			cs.PidsLimit = r.Limits.Pids
		}
		if r.Reservations != nil {
			out.Resources.Reservations = &api.Resources{NanoCPUs: r.Reservations.NanoCPUs, MemoryBytes: r.Reservations.MemoryBytes}
		}
	}
	if rp := t.RestartPolicy; rp != nil {
		out.Restart = &api.RestartPolicy{}
		switch rp.Condition {
		case swarm.RestartPolicyConditionAny, "":
			out.Restart.Condition = api.RestartOnAny
		case swarm.RestartPolicyConditionOnFailure:
			out.Restart.Condition = api.RestartOnFailure
		case swarm.RestartPolicyConditionNone:
			out.Restart.Condition = api.RestartOnNone
		default:
			return api.TaskSpec{}, invalid("invalid RestartCondition: %q", rp.Condition)
		}
		if rp.Delay != nil {
			out.Restart.Delay = gogotypes.DurationProto(*rp.Delay)
		}
		if rp.MaxAttempts != nil {
			out.Restart.MaxAttempts = *rp.MaxAttempts
		}
		if rp.Window != nil {
			out.Restart.Window = gogotypes.DurationProto(*rp.Window)
		}
	}
	if p := t.Placement; p != nil {
		out.Placement = &api.Placement{Constraints: p.Constraints, MaxReplicas: p.MaxReplicas}
		for _, pref := range p.Preferences {
			if pref.Spread == nil {
				continue
			}
			out.Placement.Preferences = append(out.Placement.Preferences, &api.PlacementPreference{
				Preference: &api.PlacementPreference_Spread{Spread: &api.SpreadOver{SpreadDescriptor: pref.Spread.SpreadDescriptor}},
			})
		}
		for _, pl := range p.Platforms {
			out.Placement.Platforms = append(out.Placement.Platforms, &api.Platform{Architecture: pl.Architecture, OS: pl.OS})
		}
	}
	if d := t.LogDriver; d != nil {
		out.LogDriver = &api.Driver{Name: d.Name, Options: d.Options}
	}
	return out, nil
}

func containerSpecToGRPC(c *swarm.ContainerSpec) (*api.ContainerSpec, error) {
	out := &api.ContainerSpec{
		Image:          c.Image,
		Labels:         c.Labels,
		Command:        c.Command,
		Args:           c.Args,
		Hostname:       c.Hostname,
		Env:            c.Env,
		Dir:            c.Dir,
		User:           c.User,
		Groups:         c.Groups,
		StopSignal:     c.StopSignal,
		TTY:            c.TTY,
		OpenStdin:      c.OpenStdin,
		ReadOnly:       c.ReadOnly,
		Hosts:          c.Hosts,
		Sysctls:        c.Sysctls,
		CapabilityAdd:  c.CapabilityAdd,
		CapabilityDrop: c.CapabilityDrop,
		OomScoreAdj:    c.OomScoreAdj,
	}
	if c.Init != nil {
		out.Init = &gogotypes.BoolValue{Value: *c.Init}
	}
	if c.StopGracePeriod != nil {
		out.StopGracePeriod = gogotypes.DurationProto(*c.StopGracePeriod)
	}
	if d := c.DNSConfig; d != nil {
		out.DNSConfig = &api.ContainerSpec_DNSConfig{Search: d.Search, Options: d.Options}
		for _, a := range d.Nameservers {
			out.DNSConfig.Nameservers = append(out.DNSConfig.Nameservers, a.String())
		}
	}
	if h := c.Healthcheck; h != nil {
		out.Healthcheck = &api.HealthConfig{
			Test:          h.Test,
			Interval:      gogotypes.DurationProto(h.Interval),
			Timeout:       gogotypes.DurationProto(h.Timeout),
			StartPeriod:   gogotypes.DurationProto(h.StartPeriod),
			StartInterval: gogotypes.DurationProto(h.StartInterval),
			Retries:       int32(h.Retries),
		}
	}
	for _, u := range c.Ulimits {
		if u == nil {
			continue
		}
		out.Ulimits = append(out.Ulimits, &api.ContainerSpec_Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	for _, m := range c.Mounts {
		gm, err := mountToGRPC(m)
		if err != nil {
			return nil, err
		}
		out.Mounts = append(out.Mounts, gm)
	}
	for _, s := range c.Secrets {
		if s == nil {
			continue
		}
		ref := &api.SecretReference{SecretID: s.SecretID, SecretName: s.SecretName}
		if s.File != nil {
			ref.Target = &api.SecretReference_File{File: &api.FileTarget{Name: s.File.Name, UID: s.File.UID, GID: s.File.GID, Mode: s.File.Mode}}
		}
		out.Secrets = append(out.Secrets, ref)
	}
	for _, cf := range c.Configs {
		if cf == nil {
			continue
		}
		ref := &api.ConfigReference{ConfigID: cf.ConfigID, ConfigName: cf.ConfigName}
		switch {
		case cf.Runtime != nil:
			ref.Target = &api.ConfigReference_Runtime{Runtime: &api.RuntimeTarget{}}
		case cf.File != nil:
			ref.Target = &api.ConfigReference_File{File: &api.FileTarget{Name: cf.File.Name, UID: cf.File.UID, GID: cf.File.GID, Mode: cf.File.Mode}}
		}
		out.Configs = append(out.Configs, ref)
	}
	if p := c.Privileges; p != nil && (p.CredentialSpec != nil || p.SELinuxContext != nil) {
		return nil, invalid("hutch's swarm mode does not take credential specs or SELinux contexts")
	}
	return out, nil
}

func mountToGRPC(m mount.Mount) (api.Mount, error) {
	out := api.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	switch m.Type {
	case mount.TypeBind:
		out.Type = api.MountTypeBind
		if o := m.BindOptions; o != nil {
			out.BindOptions = &api.Mount_BindOptions{NonRecursive: o.NonRecursive}
			if o.Propagation != "" {
				v, ok := api.Mount_BindOptions_MountPropagation_value[strings.ToUpper(string(o.Propagation))]
				if !ok {
					return api.Mount{}, invalid("invalid propagation mode: %s", o.Propagation)
				}
				out.BindOptions.Propagation = api.Mount_BindOptions_MountPropagation(v)
			}
		}
	case mount.TypeVolume:
		out.Type = api.MountTypeVolume
		if o := m.VolumeOptions; o != nil {
			out.VolumeOptions = &api.Mount_VolumeOptions{NoCopy: o.NoCopy, Labels: o.Labels, Subpath: o.Subpath}
			if o.DriverConfig != nil {
				out.VolumeOptions.DriverConfig = &api.Driver{Name: o.DriverConfig.Name, Options: o.DriverConfig.Options}
			}
		}
	case mount.TypeTmpfs:
		out.Type = api.MountTypeTmpfs
		if o := m.TmpfsOptions; o != nil {
			out.TmpfsOptions = &api.Mount_TmpfsOptions{SizeBytes: o.SizeBytes, Mode: o.Mode}
		}
	default:
		return api.Mount{}, invalid("invalid mount type: %s", m.Type)
	}
	return out, nil
}

func mountFromGRPC(m api.Mount) mount.Mount {
	out := mount.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	switch m.Type {
	case api.MountTypeBind:
		out.Type = mount.TypeBind
		if o := m.BindOptions; o != nil {
			out.BindOptions = &mount.BindOptions{Propagation: mount.Propagation(strings.ToLower(o.Propagation.String())), NonRecursive: o.NonRecursive}
		}
	case api.MountTypeVolume:
		out.Type = mount.TypeVolume
		if o := m.VolumeOptions; o != nil {
			out.VolumeOptions = &mount.VolumeOptions{NoCopy: o.NoCopy, Labels: o.Labels, Subpath: o.Subpath}
			if o.DriverConfig != nil {
				out.VolumeOptions.DriverConfig = &mount.Driver{Name: o.DriverConfig.Name, Options: o.DriverConfig.Options}
			}
		}
	case api.MountTypeTmpfs:
		out.Type = mount.TypeTmpfs
		if o := m.TmpfsOptions; o != nil {
			out.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: o.SizeBytes, Mode: o.Mode}
		}
	}
	return out
}

// TaskSpecFromGRPC is the task template as Docker shows it.
func TaskSpecFromGRPC(t api.TaskSpec) swarm.TaskSpec {
	out := swarm.TaskSpec{ForceUpdate: t.ForceUpdate, Runtime: swarm.RuntimeContainer}
	if c := t.GetContainer(); c != nil {
		out.ContainerSpec = containerSpecFromGRPC(c)
	}
	if r := t.Resources; r != nil {
		out.Resources = &swarm.ResourceRequirements{}
		if r.Limits != nil {
			out.Resources.Limits = &swarm.Limit{NanoCPUs: r.Limits.NanoCPUs, MemoryBytes: r.Limits.MemoryBytes}
			if c := t.GetContainer(); c != nil {
				out.Resources.Limits.Pids = c.PidsLimit
			}
		}
		if r.Reservations != nil {
			out.Resources.Reservations = &swarm.Resources{NanoCPUs: r.Reservations.NanoCPUs, MemoryBytes: r.Reservations.MemoryBytes}
		}
	}
	if rp := t.Restart; rp != nil {
		out.RestartPolicy = &swarm.RestartPolicy{}
		switch rp.Condition {
		case api.RestartOnNone:
			out.RestartPolicy.Condition = swarm.RestartPolicyConditionNone
		case api.RestartOnFailure:
			out.RestartPolicy.Condition = swarm.RestartPolicyConditionOnFailure
		default:
			out.RestartPolicy.Condition = swarm.RestartPolicyConditionAny
		}
		if rp.Delay != nil {
			d, _ := gogotypes.DurationFromProto(rp.Delay)
			out.RestartPolicy.Delay = &d
		}
		ma := rp.MaxAttempts
		out.RestartPolicy.MaxAttempts = &ma
		if rp.Window != nil {
			w, _ := gogotypes.DurationFromProto(rp.Window)
			out.RestartPolicy.Window = &w
		}
	}
	if p := t.Placement; p != nil {
		out.Placement = &swarm.Placement{Constraints: p.Constraints, MaxReplicas: p.MaxReplicas}
		for _, pref := range p.Preferences {
			if s := pref.GetSpread(); s != nil {
				out.Placement.Preferences = append(out.Placement.Preferences, swarm.PlacementPreference{Spread: &swarm.SpreadOver{SpreadDescriptor: s.SpreadDescriptor}})
			}
		}
		for _, pl := range p.Platforms {
			out.Placement.Platforms = append(out.Placement.Platforms, swarm.Platform{Architecture: pl.Architecture, OS: pl.OS})
		}
	}
	if d := t.LogDriver; d != nil {
		out.LogDriver = &swarm.Driver{Name: d.Name, Options: d.Options}
	}
	return out
}

func containerSpecFromGRPC(c *api.ContainerSpec) *swarm.ContainerSpec {
	out := &swarm.ContainerSpec{
		Image:          c.Image,
		Labels:         c.Labels,
		Command:        c.Command,
		Args:           c.Args,
		Hostname:       c.Hostname,
		Env:            c.Env,
		Dir:            c.Dir,
		User:           c.User,
		Groups:         c.Groups,
		StopSignal:     c.StopSignal,
		TTY:            c.TTY,
		OpenStdin:      c.OpenStdin,
		ReadOnly:       c.ReadOnly,
		Hosts:          c.Hosts,
		Sysctls:        c.Sysctls,
		CapabilityAdd:  c.CapabilityAdd,
		CapabilityDrop: c.CapabilityDrop,
		OomScoreAdj:    c.OomScoreAdj,
		Isolation:      container.IsolationDefault,
	}
	if c.Init != nil {
		v := c.Init.Value
		out.Init = &v
	}
	if c.StopGracePeriod != nil {
		d, _ := gogotypes.DurationFromProto(c.StopGracePeriod)
		out.StopGracePeriod = &d
	}
	if h := c.Healthcheck; h != nil {
		out.Healthcheck = &container.HealthConfig{
			Test:          h.Test,
			Interval:      fromDuration(h.Interval),
			Timeout:       fromDuration(h.Timeout),
			StartPeriod:   fromDuration(h.StartPeriod),
			StartInterval: fromDuration(h.StartInterval),
			Retries:       int(h.Retries),
		}
	}
	if d := c.DNSConfig; d != nil {
		out.DNSConfig = &swarm.DNSConfig{Search: d.Search, Options: d.Options}
		out.DNSConfig.Nameservers = parseAddrs(d.Nameservers)
	}
	for _, u := range c.Ulimits {
		out.Ulimits = append(out.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	for _, m := range c.Mounts {
		out.Mounts = append(out.Mounts, mountFromGRPC(m))
	}
	for _, s := range c.Secrets {
		ref := &swarm.SecretReference{SecretID: s.SecretID, SecretName: s.SecretName}
		if f := s.GetFile(); f != nil {
			ref.File = &swarm.SecretReferenceFileTarget{Name: f.Name, UID: f.UID, GID: f.GID, Mode: f.Mode}
		}
		out.Secrets = append(out.Secrets, ref)
	}
	for _, cf := range c.Configs {
		ref := &swarm.ConfigReference{ConfigID: cf.ConfigID, ConfigName: cf.ConfigName}
		if f := cf.GetFile(); f != nil {
			ref.File = &swarm.ConfigReferenceFileTarget{Name: f.Name, UID: f.UID, GID: f.GID, Mode: f.Mode}
		} else if cf.GetRuntime() != nil {
			ref.Runtime = &swarm.ConfigReferenceRuntimeTarget{}
		}
		out.Configs = append(out.Configs, ref)
	}
	return out
}
