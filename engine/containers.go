package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/networking"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/spec"
)

// CreateRequest is POST /containers/create.
type CreateRequest struct {
	Name       string
	Config     *containertypes.Config
	HostConfig *containertypes.HostConfig
	// NetworkingConfig holds the endpoint settings (aliases, addresses)
	// for the networks the container is created on.
	NetworkingConfig *network.NetworkingConfig
	// Platform ("os[/arch[/variant]]"), when given, is the platform the
	// image must be for.
	Platform string
}

// ContainerCreate records a new container with its writable layer. It
// changes nothing when it fails: no record, no layer.
func (e *Engine) ContainerCreate(ctx context.Context, req CreateRequest) (containertypes.CreateResponse, error) {
	if req.Config == nil {
		return containertypes.CreateResponse{}, errdefs.ErrInvalidArgument.WithMessage("config cannot be empty in order to create a container")
	}
	if req.Config.Image == "" {
		return containertypes.CreateResponse{}, errdefs.ErrInvalidArgument.WithMessage("no image specified")
	}
	hc := req.HostConfig
	if hc == nil {
		hc = &containertypes.HostConfig{}
	}
	if err := validateNetMode(req.Config, hc); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := validateHostConfig(hc); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := checkCreate(req.Config, hc); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := e.mergeLogConfig(&hc.LogConfig); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := e.checkLinks(ctx, hc); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := validateHealthcheck(req.Config.Healthcheck); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := e.checkSharedNamespaces(ctx, hc); err != nil {
		return containertypes.CreateResponse{}, err
	}
	if e.images == nil {
		return containertypes.CreateResponse{}, errdefs.ErrUnavailable.WithMessage("no image store")
	}
	if _, err := reference.ParseAnyReference(req.Config.Image); err != nil {
		return containertypes.CreateResponse{}, errdefs.ErrInvalidArgument.WithMessage(err.Error())
	}
	imageID, img, err := e.images.ContainerImage(ctx, req.Config.Image)
	if err != nil {
		return containertypes.CreateResponse{}, err
	}
	if err := checkImagePlatform(req.Config.Image, img, req.Platform); err != nil {
		return containertypes.CreateResponse{}, err
	}
	var imgCfg *dockerspec.DockerOCIImageConfig
	if img != nil {
		imgCfg = &img.Config
	}
	cfg, err := spec.MergeConfig(req.Config, imgCfg)
	if err != nil {
		return containertypes.CreateResponse{}, err
	}
	fillCreateDefaults(hc, spec.DefaultMaskedPaths(), spec.DefaultReadonlyPaths())
	id := container.NewID()
	if cfg.Hostname == "" && hc.NetworkMode != "host" {
		cfg.Hostname = id[:12]
	}
	c := &container.Container{
		ID:         id,
		Name:       req.Name,
		Created:    time.Now().UTC(),
		Config:     cfg,
		HostConfig: hc,
		ImageID:    imageID,
		Image:      req.Config.Image,
		Driver:     e.images.Driver(),
	}
	if err := e.configureNetwork(ctx, c, req.NetworkingConfig); err != nil {
		return containertypes.CreateResponse{}, err
	}
	args := append(slices.Clone([]string(cfg.Entrypoint)), cfg.Cmd...)
	c.Path, c.Args = args[0], args[1:]
	if len(hc.Binds)+len(hc.Mounts)+len(cfg.Volumes)+len(hc.VolumesFrom) > 0 {
		// No volume it makes or mounts goes before its record is made.
		e.volMu.Lock()
		defer e.volMu.Unlock()
	}
	cm, err := e.containerMounts(ctx, cfg, hc)
	if err != nil {
		return containertypes.CreateResponse{}, err
	}
	c.Mounts = cm.points

	endRootfs := e.phase("create/rootfs", id)
	rootfsID, err := e.rootfs.Create(ctx, id, imageID, hc.AutoRemove)
	endRootfs()
	if err == nil {
		if err = e.setUpRootfs(ctx, rootfsID, hc, cm.copyUp, newWorkdir(cfg, imgCfg)); err != nil {
			e.rootfs.Remove(rootfsID)
		}
	}
	if err != nil {
		e.removeVolumes(cm.made)
		return containertypes.CreateResponse{}, err
	}
	dir := e.containers.Dir(id)
	if hc.LogConfig.Type == logJSONFile {
		// The local driver's file is its own business, as on Docker.
		c.LogPath = filepath.Join(dir, id+"-json.log")
	}
	c.Runtime = container.Runtime{
		RootfsID:  rootfsID,
		BundleDir: filepath.Join(e.opts.StateDir, "containers", id),
		// Unix socket paths are limited to 108 bytes: keep this one short.
		ShimSocket: filepath.Join(e.opts.StateDir, "s", id[:24]+".sock"),
		ExitFile:   filepath.Join(dir, "exit.json"),
		Inherited:  cm.inherited,
	}
	endRecord := e.phase("create/record", id)
	err = e.containers.Create(ctx, c)
	endRecord()
	if err != nil {
		e.rootfs.Remove(rootfsID)
		e.removeVolumes(cm.made)
		return containertypes.CreateResponse{}, err
	}
	e.containerEvent(c, eventtypes.ActionCreate, nil)
	return containertypes.CreateResponse{ID: id, Warnings: e.createWarnings(hc)}, nil
}

// createWarnings tells, at create time, which limits this host cannot
// enforce (cgroup v1 rootless): the shim strips them at start.
func (e *Engine) createWarnings(hc *containertypes.HostConfig) []string {
	r := hc.Resources
	sp := &specs.Spec{Linux: &specs.Linux{Resources: &specs.LinuxResources{}}}
	lr := sp.Linux.Resources
	if r.Memory > 0 || r.MemoryReservation > 0 || r.MemorySwap > 0 {
		lr.Memory = &specs.LinuxMemory{}
		if r.Memory > 0 {
			lr.Memory.Limit = &r.Memory
		}
		if r.MemoryReservation > 0 {
			lr.Memory.Reservation = &r.MemoryReservation
		}
		if r.MemorySwap > 0 {
			lr.Memory.Swap = &r.MemorySwap
		}
	}
	if r.NanoCPUs > 0 || r.CPUQuota > 0 || r.CPUShares > 0 || r.CpusetCpus != "" {
		lr.CPU = &specs.LinuxCPU{Cpus: r.CpusetCpus}
		if r.CPUShares > 0 {
			s := uint64(r.CPUShares)
			lr.CPU.Shares = &s
		}
		if r.NanoCPUs > 0 || r.CPUQuota > 0 {
			q := r.CPUQuota
			if r.NanoCPUs > 0 {
				q = r.NanoCPUs / 10000 // per 100ms period
			}
			lr.CPU.Quota = &q
		}
	}
	if r.PidsLimit != nil && *r.PidsLimit > 0 {
		lr.Pids = &specs.LinuxPids{Limit: r.PidsLimit}
	}
	for _, d := range r.Devices {
		if p := d.CgroupPermissions; p != "" {
			lr.Devices = append(lr.Devices, specs.LinuxDeviceCgroup{Allow: true, Type: "c", Access: p})
		}
	}
	for _, raw := range r.DeviceCgroupRules {
		if rule, err := spec.ParseDeviceRule(raw); err == nil { // a bad one fails the start
			lr.Devices = append(lr.Devices, rule)
		}
	}
	w := shim.AdjustSpec(sp, e.host)
	if e.opts.NetNS == "" && len(hc.PortBindings) > 0 && !hc.NetworkMode.IsHost() {
		w = append(w, noNetworkPorts)
	}
	if len(w) == 0 {
		return nil
	}
	return w
}

// noNetworkPorts is the create warning of a container that publishes
// ports on a daemon without networking (hutch daemon --network=none, or
// where slirp4netns cannot run): nothing forwards them.
const noNetworkPorts = "the daemon runs without networking (slirp4netns): published ports are not reachable; run `hutch check`"

func validateHostConfig(hc *containertypes.HostConfig) error {
	// -v specifications are checked at create; a missing source is made
	// at start, as Docker does (createBindSources).
	for _, b := range hc.Binds {
		if _, err := spec.ParseBind(b); err != nil {
			return err
		}
	}
	// A --mount bind needs its source, unless it asks for it to be made.
	for _, m := range hc.Mounts {
		if m.Type != "bind" || m.Source == "" || (m.BindOptions != nil && m.BindOptions.CreateMountpoint) {
			continue
		}
		if _, err := os.Stat(m.Source); errors.Is(err, os.ErrNotExist) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid mount config for type \"bind\": bind source path does not exist: %s", m.Source))
		}
	}
	if err := checkRestartPolicy(hc.RestartPolicy); err != nil {
		return err
	}
	if err := spec.CheckSeccomp(hc); err != nil {
		return err
	}
	if hc.AutoRemove && hc.RestartPolicy.Name != "" && !hc.RestartPolicy.IsNone() {
		return errdefs.ErrInvalidArgument.WithMessage("can't create 'AutoRemove' container with restart policy")
	}
	return nil
}

// checkRestartPolicy checks a restart policy with the API's own rules and
// words, as Docker does ("invalid restart policy: unknown policy 'x'; use
// one of …"); an empty name takes any retry count, for the clients of
// Docker before 25.0 that sent one. Its errors are InvalidParameter.
func checkRestartPolicy(rp containertypes.RestartPolicy) error {
	return containertypes.ValidateRestartPolicy(rp)
}

// ContainerInspect answers GET /containers/{id}/json.
func (e *Engine) ContainerInspect(ctx context.Context, ref string) (containertypes.InspectResponse, error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return containertypes.InspectResponse{}, err
	}
	resp := c.Inspect()
	resp.HostConfig.Links = e.inspectLinks(ctx, c)
	if c.Runtime.RootfsID != "" && resp.GraphDriver != nil {
		// As Docker: the layer's directories (LowerDir, UpperDir…).
		if data, err := e.images.RootfsDriverData(ctx, c.Runtime.RootfsID); err == nil {
			resp.GraphDriver.Data = data
		}
	}
	return resp, nil
}

// ContainerSize answers size=1 of GET /containers/json and
// /containers/{id}/json, as Docker counts: the bytes of what the container
// changed in its writable layer (SizeRw), and those with its image's
// (SizeRootFs).
func (e *Engine) ContainerSize(ctx context.Context, ref string) (rw, rootfs int64, err error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return 0, 0, err
	}
	if rw, err = e.rwSize(ctx, c); err != nil {
		return 0, 0, err
	}
	rootfs = rw
	if img, err := e.images.LookupImage(ctx, c.ImageID); err == nil {
		rootfs += img.Size()
	}
	return rw, rootfs, nil
}

// rwSize is what c changed in its writable layer, in bytes.
func (e *Engine) rwSize(ctx context.Context, c *container.Container) (int64, error) {
	if c.Runtime.RootfsID == "" {
		return 0, errdefs.ErrNotFound.WithMessage("container " + c.ID + " has no writable layer")
	}
	return e.images.RootfsSize(ctx, c.Runtime.RootfsID)
}

// ListRequest is GET /containers/json.
type ListRequest struct {
	All     bool
	Limit   int
	Filters string // the raw filters JSON
}

// ContainerList answers GET /containers/json.
func (e *Engine) ContainerList(ctx context.Context, req ListRequest) ([]containertypes.Summary, error) {
	f, err := container.ParseFilters(req.Filters)
	if err != nil {
		return nil, err
	}
	opts := container.ListOptions{All: req.All, Limit: req.Limit, Filters: f}
	if anc := f.Values("ancestor"); len(anc) > 0 {
		if opts.Ancestors, err = e.ancestorIDs(ctx, anc); err != nil {
			return nil, err
		}
	}
	list, err := e.containers.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	linkNames := e.containers.LinkNames()
	out := make([]containertypes.Summary, 0, len(list))
	for _, c := range list {
		s := c.SummaryAt(now)
		if extra := linkNames[c.ID]; len(extra) > 0 {
			// As Docker lists a container's names: its own and its links',
			// sorted.
			s.Names = append(s.Names, extra...)
			slices.Sort(s.Names)
		}
		out = append(out, s)
	}
	return out, nil
}

// ContainerRename answers POST /containers/{id}/rename.
func (e *Engine) ContainerRename(ctx context.Context, ref, name string) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if err := e.containers.Rename(ctx, c.ID, name); err != nil {
		return err
	}
	e.containerEventByID(ctx, c.ID, eventtypes.ActionRename, map[string]string{"oldName": c.Name})
	return nil
}

// RemoveRequest is DELETE /containers/{id}.
type RemoveRequest struct {
	Force, Volumes bool
}

// ContainerRemove deletes a container with its rootfs and logs; a running
// one only with Force (it is killed first).
func (e *Engine) ContainerRemove(ctx context.Context, ref string, req RemoveRequest) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	// A removal during a start would release the rootfs and the network
	// under the shim being started: it waits for the start, and no other
	// begins until it ends.
	endHold, err := e.holdStarts(ctx, c.ID)
	if err != nil {
		return err
	}
	defer endHold()
	if c, err = e.containers.Get(ctx, c.ID); err != nil {
		return err
	}
	if err := e.containers.Update(ctx, c.ID, func(c *container.Container) error {
		return c.State.SetRemoving(ref, req.Force)
	}); err != nil {
		return err
	}
	if e.endRestart(ctx, c.ID) {
		c.State.Status = container.StatusExited
	}
	e.restarts.forget(c.ID)
	if c.State.Running() {
		if err := e.killAndWait(ctx, c.ID); err != nil {
			e.containers.Update(context.WithoutCancel(ctx), c.ID, func(c *container.Container) error {
				c.State.CancelRemoving()
				return nil
			})
			return err
		}
	}
	return e.finishRemove(ctx, c.ID, req.Volumes)
}

// finishRemove deletes what a container is made of, then its record, and
// with volumes its anonymous volumes; its writable layer is deleted or
// emptied for reuse afterwards, in the background (package rootfs).
func (e *Engine) finishRemove(ctx context.Context, id string, volumes bool) error {
	defer e.phase("remove", id)()
	c, err := e.containers.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := e.releaseArtifacts(ctx, c); err != nil {
		e.containers.Update(context.WithoutCancel(ctx), id, func(c *container.Container) error {
			return c.State.SetDead("removal failed: " + err.Error())
		})
		return err
	}
	if err := e.containers.Delete(ctx, id); err != nil {
		return err
	}
	e.containerEvent(c, eventtypes.ActionDestroy, nil)
	if volumes {
		if err := e.removeAnonymousVolumes(ctx, c); err != nil {
			e.log.Warn("removing the container's anonymous volumes", "container", id, "err", err)
		}
	}
	if c.Runtime.RootfsID != "" {
		volatile := c.HostConfig != nil && c.HostConfig.AutoRemove
		e.rootfs.Recycle(c.Runtime.RootfsID, c.ImageID, volatile)
	}
	return nil
}

// removeArtifacts deletes what a container is made of, its rootfs
// included, before its record goes (the reconcile of a removal that a
// dead daemon left half-done).
func (e *Engine) removeArtifacts(ctx context.Context, c *container.Container) error {
	if err := e.releaseArtifacts(ctx, c); err != nil {
		return err
	}
	if c.Runtime.RootfsID != "" {
		if err := e.images.RemoveRootfs(ctx, c.Runtime.RootfsID); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("removing the rootfs of %s: %w", c.ID, err)
		}
	}
	return nil
}

// releaseArtifacts releases a container's network and deletes its bundle.
func (e *Engine) releaseArtifacts(ctx context.Context, c *container.Container) error {
	if e.opts.Networks != nil {
		// Normally released when the run ended; after a crash, here.
		if err := e.opts.Networks.Detach(ctx, c.ID, networking.DetachOptions{Shared: e.joins.shared(c.ID)}); err != nil {
			e.log.Warn("releasing the network", "container", c.ID, "err", err)
		}
	}
	if c.Runtime.BundleDir != "" {
		unstageAll(c.Runtime.BundleDir)
		if err := os.RemoveAll(c.Runtime.BundleDir); err != nil {
			return err
		}
	}
	return nil
}
