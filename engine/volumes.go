package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	mounttypes "github.com/moby/moby/api/types/mount"
	volumetypes "github.com/moby/moby/api/types/volume"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/volume"
)

// localDriver is the only volume driver: a directory in the data root.
const localDriver = "local"

// anonymousLabel marks the volumes Docker makes for one container (-v
// /path, the image's VOLUME): `docker volume prune` removes only those
// unless asked for all.
const anonymousLabel = "com.docker.volume.anonymous"

// VolumeCreate answers POST /volumes/create. A volume of that name that
// exists already is returned as it is, as Docker does.
func (e *Engine) VolumeCreate(ctx context.Context, req volumetypes.CreateRequest) (volumetypes.Volume, error) {
	if err := checkDriver(req.Name, req.Driver, req.DriverOpts); err != nil {
		return volumetypes.Volume{}, err
	}
	if req.ClusterVolumeSpec != nil {
		return volumetypes.Volume{}, errdefs.ErrInvalidArgument.WithMessage("cluster volumes need a swarm manager, which hutch is not")
	}
	e.volMu.Lock()
	defer e.volMu.Unlock()
	v, made, err := e.volumes.Create(req.Name, req.Labels, req.DriverOpts, req.Name == "")
	if err != nil {
		return volumetypes.Volume{}, err
	}
	if made {
		e.volumeEvent(eventtypes.ActionCreate, v.Name)
	}
	return apiVolume(v), nil
}

// checkDriver refuses what the local driver of hutch cannot do: other
// drivers (Docker: no such plugin) and the local driver's mount options
// other than a bind (volume.CheckOptions).
func checkDriver(name, driver string, opts map[string]string) error {
	if driver != "" && driver != localDriver {
		return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("create %s: error looking up volume plugin %s: plugin %q not found", name, driver, driver))
	}
	if err := volume.CheckOptions(opts); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	return nil
}

// VolumeInspect answers GET /volumes/{name}.
func (e *Engine) VolumeInspect(ctx context.Context, name string) (volumetypes.Volume, error) {
	v, err := e.volumes.Get(name)
	if err != nil {
		return volumetypes.Volume{}, err
	}
	return apiVolume(v), nil
}

// volumeListKeys are the filters docker volume ls accepts.
var volumeListKeys = map[string]bool{"dangling": true, "driver": true, "label": true, "name": true}

// VolumeList answers GET /volumes.
func (e *Engine) VolumeList(ctx context.Context, filters string) (volumetypes.ListResponse, error) {
	f, err := container.ParseFiltersOf(filters, volumeListKeys)
	if err != nil {
		return volumetypes.ListResponse{}, err
	}
	dangling, err := f.Bool("dangling")
	if err != nil {
		return volumetypes.ListResponse{}, err
	}
	vs, used, err := e.volumesAndUsers(ctx)
	if err != nil {
		return volumetypes.ListResponse{}, err
	}
	out := volumetypes.ListResponse{Volumes: []volumetypes.Volume{}, Warnings: []string{}}
	for _, v := range vs {
		av := apiVolume(v)
		switch {
		case len(f.Values("name")) > 0 && !container.MatchAny(f.Values("name"), v.Name),
			len(f.Values("driver")) > 0 && !slices.Contains(f.Values("driver"), localDriver),
			!container.MatchLabels(f.Values("label"), av.Labels),
			dangling != nil && *dangling != (len(used[v.Name]) == 0):
			continue
		}
		out.Volumes = append(out.Volumes, av)
	}
	return out, nil
}

// VolumeRemove answers DELETE /volumes/{name}. A volume that a container
// (running or not) mounts is refused, force or not, as Docker does; force
// only makes a missing volume no error.
func (e *Engine) VolumeRemove(ctx context.Context, name string, force bool) error {
	e.volMu.Lock()
	defer e.volMu.Unlock()
	if _, err := e.volumes.Get(name); err != nil {
		if force && errdefs.IsNotFound(err) {
			return nil
		}
		return err
	}
	used, err := e.volumeUsers(ctx)
	if err != nil {
		return err
	}
	if ids := used[name]; len(ids) > 0 {
		return errdefs.ErrConflict.WithMessage(fmt.Sprintf("remove %s: volume is in use - [%s]", name, strings.Join(ids, ", ")))
	}
	if err := e.volumes.Remove(name); err != nil {
		return err
	}
	e.volumeEvent(eventtypes.ActionDestroy, name)
	return nil
}

// volumeEvent publishes action of the volume name.
func (e *Engine) volumeEvent(action eventtypes.Action, name string) {
	e.events.Publish(eventtypes.VolumeEventType, action, name, map[string]string{"driver": localDriver})
}

// volumePruneKeys are the filters docker volume prune accepts.
var volumePruneKeys = map[string]bool{"label": true, "label!": true, "all": true}

// VolumesPrune answers POST /volumes/prune: the volumes no container
// mounts, of them only the anonymous ones unless all (the filter
// all=true, or a client older than API 1.42, before which prune took
// every unused volume).
func (e *Engine) VolumesPrune(ctx context.Context, filters string, all bool) (volumetypes.PruneReport, error) {
	f, err := container.ParseFiltersOf(filters, volumePruneKeys)
	if err != nil {
		return volumetypes.PruneReport{}, err
	}
	if a, err := f.Bool("all"); err != nil {
		return volumetypes.PruneReport{}, err
	} else if a != nil {
		all = *a
	}
	e.volMu.Lock()
	defer e.volMu.Unlock()
	vs, used, err := e.volumesAndUsers(ctx)
	if err != nil {
		return volumetypes.PruneReport{}, err
	}
	rep := volumetypes.PruneReport{VolumesDeleted: []string{}}
	for _, v := range vs {
		labels := apiVolume(v).Labels
		if len(used[v.Name]) > 0 || (!all && !v.Anonymous) ||
			!container.PruneLabels(f, labels) {
			continue
		}
		size, _ := e.volumes.Size(v.Name)
		if err := e.volumes.Remove(v.Name); err != nil {
			e.log.Warn("pruning a volume", "volume", v.Name, "err", err)
			continue
		}
		e.volumeEvent(eventtypes.ActionDestroy, v.Name)
		rep.VolumesDeleted = append(rep.VolumesDeleted, v.Name)
		rep.SpaceReclaimed += uint64(size)
	}
	e.pruneEvent(eventtypes.VolumeEventType, rep.SpaceReclaimed)
	return rep, nil
}

// volumesAndUsers are every volume, and volumeUsers.
func (e *Engine) volumesAndUsers(ctx context.Context) ([]*volume.Volume, map[string][]string, error) {
	vs, err := e.volumes.List()
	if err != nil {
		return nil, nil, err
	}
	used, err := e.volumeUsers(ctx)
	return vs, used, err
}

// volumeUsers maps each volume a container mounts to those containers'
// ids.
func (e *Engine) volumeUsers(ctx context.Context) (map[string][]string, error) {
	cs, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, c := range cs {
		for _, m := range c.Mounts {
			if m.Type == mounttypes.TypeVolume {
				out[m.Name] = append(out[m.Name], c.ID)
			}
		}
	}
	return out, nil
}

// apiVolume is v as the API shows it.
func apiVolume(v *volume.Volume) volumetypes.Volume {
	labels := v.Labels
	if v.Anonymous {
		labels = map[string]string{anonymousLabel: ""}
		for k, l := range v.Labels {
			labels[k] = l
		}
	}
	return volumetypes.Volume{
		Name:       v.Name,
		Driver:     localDriver,
		Mountpoint: v.Mountpoint,
		CreatedAt:  v.CreatedAt.Format(time.RFC3339),
		Labels:     labels,
		Options:    v.Options,
		Scope:      "local",
	}
}
