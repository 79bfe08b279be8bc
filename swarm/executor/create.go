package executor

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/api"
)

// createOptions is the engine's create request for task t's container,
// named name; files are the host paths of its secret and config files,
// by target path.
func createOptions(t *api.Task, name string, files []mount.Mount) (client.ContainerCreateOptions, error) {
	spec := t.Spec.GetContainer()
	labels := map[string]string{}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	labels[LabelNodeID] = t.NodeID
	labels[LabelServiceID] = t.ServiceID
	labels[LabelServiceName] = t.ServiceAnnotations.Name
	labels[LabelTask] = ""
	labels[LabelTaskID] = t.ID
	labels[LabelTaskName] = name

	cfg := &container.Config{
		Image:      spec.Image,
		Labels:     labels,
		Env:        spec.Env,
		WorkingDir: spec.Dir,
		User:       spec.User,
		Hostname:   spec.Hostname,
		Tty:        spec.TTY,
		OpenStdin:  spec.OpenStdin,
		StopSignal: spec.StopSignal,
	}
	if len(spec.Command) > 0 {
		cfg.Entrypoint = spec.Command
	}
	cfg.Cmd = spec.Args
	grace := int(stopGrace(t).Seconds())
	cfg.StopTimeout = &grace
	if hc := spec.Healthcheck; hc != nil {
		cfg.Healthcheck = &container.HealthConfig{
			Test:          hc.Test,
			Interval:      duration(hc.Interval),
			Timeout:       duration(hc.Timeout),
			StartPeriod:   duration(hc.StartPeriod),
			StartInterval: duration(hc.StartInterval),
			Retries:       int(hc.Retries),
		}
	}

	hc := &container.HostConfig{
		GroupAdd:       spec.Groups,
		ReadonlyRootfs: spec.ReadOnly,
		CapAdd:         spec.CapabilityAdd,
		CapDrop:        spec.CapabilityDrop,
		Sysctls:        spec.Sysctls,
		OomScoreAdj:    int(spec.OomScoreAdj),
	}
	if spec.Init != nil {
		v := spec.Init.Value
		hc.Init = &v
	}
	if spec.PidsLimit != 0 {
		v := spec.PidsLimit
		hc.PidsLimit = &v
	}
	for _, u := range spec.Ulimits {
		hc.Ulimits = append(hc.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if d := spec.DNSConfig; d != nil {
		for _, s := range d.Nameservers {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return client.ContainerCreateOptions{}, fmt.Errorf("nameserver %q: %w", s, err)
			}
			hc.DNS = append(hc.DNS, a)
		}
		hc.DNSSearch, hc.DNSOptions = d.Search, d.Options
	}
	for _, h := range spec.Hosts {
		// SwarmKit keeps hosts as "IP name [alias…]"; the engine takes
		// "name:IP".
		f := strings.Fields(h)
		for _, n := range f[1:] {
			hc.ExtraHosts = append(hc.ExtraHosts, n+":"+f[0])
		}
	}
	if r := t.Spec.Resources; r != nil && r.Limits != nil {
		hc.NanoCPUs = r.Limits.NanoCPUs
		hc.Memory = r.Limits.MemoryBytes
	}
	if d := t.Spec.LogDriver; d != nil && d.Name != "" {
		hc.LogConfig = container.LogConfig{Type: d.Name, Config: d.Options}
	}
	for _, m := range spec.Mounts {
		mm, err := engineMount(m)
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		hc.Mounts = append(hc.Mounts, mm)
	}
	hc.Mounts = append(hc.Mounts, files...)
	ports, err := hostPorts(t)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	if len(ports) > 0 {
		hc.PortBindings = network.PortMap{}
		cfg.ExposedPorts = network.PortSet{}
		for p, b := range ports {
			hc.PortBindings[p] = append(hc.PortBindings[p], b...)
			cfg.ExposedPorts[p] = struct{}{}
		}
	}
	opts := client.ContainerCreateOptions{Name: name, Config: cfg, HostConfig: hc}
	if nets := ParseNetworks(t.ServiceAnnotations.Labels[NetworksLabel]); len(nets) > 0 {
		hc.NetworkMode = container.NetworkMode(nets[0].Name)
		opts.NetworkingConfig = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{}}
		for _, n := range nets {
			aliases := append([]string{t.ServiceAnnotations.Name}, n.Aliases...)
			opts.NetworkingConfig.EndpointsConfig[n.Name] = &network.EndpointSettings{Aliases: aliases}
		}
	}
	return opts, nil
}

func duration(d interface{ GetSeconds() int64 }) time.Duration {
	if d == nil {
		return 0
	}
	type nanos interface{ GetNanos() int32 }
	v := time.Duration(d.GetSeconds()) * time.Second
	if n, ok := d.(nanos); ok {
		v += time.Duration(n.GetNanos())
	}
	return v
}

// engineMount is a service mount as the engine's create request takes it.
func engineMount(m api.Mount) (mount.Mount, error) {
	mm := mount.Mount{Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
	switch m.Type {
	case api.MountTypeBind:
		mm.Type = mount.TypeBind
		if o := m.BindOptions; o != nil {
			mm.BindOptions = &mount.BindOptions{
				Propagation:  mount.Propagation(strings.ToLower(o.Propagation.String())),
				NonRecursive: o.NonRecursive,
			}
		}
	case api.MountTypeVolume:
		mm.Type = mount.TypeVolume
		if o := m.VolumeOptions; o != nil {
			mm.VolumeOptions = &mount.VolumeOptions{NoCopy: o.NoCopy, Labels: o.Labels, Subpath: o.Subpath}
			if o.DriverConfig != nil {
				mm.VolumeOptions.DriverConfig = &mount.Driver{Name: o.DriverConfig.Name, Options: o.DriverConfig.Options}
			}
		}
	case api.MountTypeTmpfs:
		mm.Type = mount.TypeTmpfs
		if o := m.TmpfsOptions; o != nil {
			mm.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: o.SizeBytes, Mode: o.Mode}
		}
	default:
		return mount.Mount{}, fmt.Errorf("mount type %s is not supported", m.Type)
	}
	return mm, nil
}

// hostPorts are the ports the task publishes on its node (mode=host);
// the ingress routing mesh is refused before a service is created.
func hostPorts(t *api.Task) (network.PortMap, error) {
	if t.Endpoint == nil && t.Spec.GetContainer() == nil {
		return nil, nil
	}
	var cfgs []*api.PortConfig
	if t.Endpoint != nil && t.Endpoint.Spec != nil {
		cfgs = t.Endpoint.Spec.Ports
	}
	pm := network.PortMap{}
	for _, p := range cfgs {
		if p.PublishMode != api.PublishModeHost {
			continue
		}
		proto := strings.ToLower(p.Protocol.String())
		port, err := network.ParsePort(strconv.Itoa(int(p.TargetPort)) + "/" + proto)
		if err != nil {
			return nil, err
		}
		b := network.PortBinding{}
		if p.PublishedPort != 0 {
			b.HostPort = strconv.Itoa(int(p.PublishedPort))
		}
		pm[port] = append(pm[port], b)
	}
	return pm, nil
}

// portStatus is what the container publishes, as SwarmKit reports it.
func portStatus(st container.InspectResponse) *api.PortStatus {
	if st.NetworkSettings == nil {
		return nil
	}
	ps := &api.PortStatus{}
	for p, bs := range st.NetworkSettings.Ports {
		proto := api.ProtocolTCP
		switch p.Proto() {
		case "udp":
			proto = api.ProtocolUDP
		case "sctp":
			proto = api.ProtocolSCTP
		}
		for _, b := range bs {
			hp, err := strconv.Atoi(b.HostPort)
			if err != nil {
				continue
			}
			ps.Ports = append(ps.Ports, &api.PortConfig{
				Protocol:      proto,
				TargetPort:    uint32(p.Num()),
				PublishedPort: uint32(hp),
				PublishMode:   api.PublishModeHost,
			})
		}
	}
	return ps
}

// NetworksLabel is the service label in which hutch-swarm keeps the
// engine networks a service's tasks join (JSON, a list of LocalNetwork).
const NetworksLabel = "com.hutch.swarm.networks"

// LocalNetwork is one engine network a service's tasks join.
type LocalNetwork struct {
	ID, Name string
	Aliases  []string `json:",omitempty"`
}

// ParseNetworks reads NetworksLabel's value; a bad one is no networks.
func ParseNetworks(v string) []LocalNetwork {
	if v == "" {
		return nil
	}
	var out []LocalNetwork
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil
	}
	return out
}

// writeFiles writes the task's secrets and configs into a directory of
// the task's own and returns their bind mounts: secrets at
// /run/secrets/<target> unless the target is absolute, configs at their
// target (relative to /).
func (c *controller) writeFiles(t *api.Task) ([]mount.Mount, error) {
	spec := t.Spec.GetContainer()
	if len(spec.Secrets) == 0 && len(spec.Configs) == 0 {
		return nil, nil
	}
	dir := filepath.Join(c.e.files, t.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var mounts []mount.Mount
	// One file per reference: a secret may be mounted twice with
	// different owners and modes.
	write := func(kind, id string, data []byte, ft *api.FileTarget, target string) error {
		p := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", kind, id, len(mounts)))
		mode := ft.Mode
		if mode == 0 {
			mode = 0o444
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return err
		}
		if err := os.Chmod(p, mode.Perm()); err != nil {
			return err
		}
		uid, _ := strconv.Atoi(ft.UID)
		gid, _ := strconv.Atoi(ft.GID)
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: p, Target: target, ReadOnly: true})
		return nil
	}
	for _, ref := range spec.Secrets {
		ft := ref.GetFile()
		if ft == nil {
			continue
		}
		s, err := c.e.deps.Secrets().Get(ref.SecretID)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", ref.SecretName, err)
		}
		target := ft.Name
		if !filepath.IsAbs(target) {
			target = filepath.Join("/run/secrets", target)
		}
		if err := write("secret", ref.SecretID, s.Spec.Data, ft, target); err != nil {
			return nil, err
		}
	}
	for _, ref := range spec.Configs {
		ft := ref.GetFile()
		if ft == nil {
			continue
		}
		cf, err := c.e.deps.Configs().Get(ref.ConfigID)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", ref.ConfigName, err)
		}
		target := ft.Name
		if !filepath.IsAbs(target) {
			target = filepath.Join("/", target)
		}
		if err := write("config", ref.ConfigID, cf.Spec.Data, ft, target); err != nil {
			return nil, err
		}
	}
	return mounts, nil
}

func (c *controller) removeFiles() {
	_ = os.RemoveAll(filepath.Join(c.e.files, c.current().ID))
}
