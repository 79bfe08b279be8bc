package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/api/types/volume"

	"github.com/hutch-engine/hutch/engine"
)

// DiskUsageBackend serves GET /system/df.
type DiskUsageBackend interface {
	SystemDiskUsage(ctx context.Context) (engine.DiskUsage, error)
}

// legacyDiskUsage is /system/df before API 1.52: the lists, which the
// client sums up. Lists of the types not asked for are left out.
type legacyDiskUsage struct {
	LayersSize int64               `json:"LayersSize,omitempty"`
	Images     []image.Summary     `json:"Images,omitzero"`
	Containers []container.Summary `json:"Containers,omitzero"`
	Volumes    []volume.Volume     `json:"Volumes,omitzero"`
	BuildCache []build.CacheRecord `json:"BuildCache,omitzero"`
}

// diskUsageCompat is /system/df from API 1.52: the totals per type, and
// the lists of before unless the client asked for verbose.
type diskUsageCompat struct {
	*legacyDiskUsage
	*system.DiskUsage
}

// systemDF answers GET /system/df for the types asked for with type=
// (all by default): the lists before API 1.52; from it the totals per
// type with their lists as Items, and beside them the lists of before
// unless verbose=1. Docker (API 1.56 included) still sends those old
// lists to clients that ask for the newest version without verbose, as
// dockerode and docker-py do, which read them (df().Images).
func (s *Server) systemDF(w http.ResponseWriter, r *http.Request) error {
	types := r.URL.Query()["type"]
	for _, t := range types {
		if !slices.Contains([]string{"container", "image", "volume", "build-cache"}, t) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("unknown object type: %s", t))
		}
	}
	du, err := s.backend.SystemDiskUsage(r.Context())
	if err != nil {
		return err
	}
	want := func(t string) bool { return len(types) == 0 || slices.Contains(types, t) }
	var cache []build.CacheRecord
	if want("build-cache") && s.buildkit != nil {
		if cache, err = s.buildkit.BuildCache(r.Context()); err != nil {
			return err
		}
	}
	old := versionLess(APIVersion(r.Context()), "1.52")
	var legacy legacyDiskUsage
	if old || !queryBool(r, "verbose") {
		legacy = legacyLists(du, cache, want)
	}
	if old {
		return writeJSON(w, http.StatusOK, legacy)
	}
	out := &system.DiskUsage{}
	if want("image") {
		out.ImageUsage = imageUsage(du)
	}
	if want("container") {
		out.ContainerUsage = containerUsage(du)
	}
	if want("volume") {
		out.VolumeUsage = volumeUsage(du)
	}
	if want("build-cache") {
		out.BuildCacheUsage = buildCacheUsage(cache)
	}
	return writeJSON(w, http.StatusOK, diskUsageCompat{&legacy, out})
}

// legacyLists are the lists of API < 1.52 of the types wanted, empty
// rather than null.
func legacyLists(du engine.DiskUsage, cache []build.CacheRecord, want func(string) bool) legacyDiskUsage {
	var l legacyDiskUsage
	if want("image") {
		l.LayersSize, l.Images = du.LayersSize, nonNil(du.Images)
	}
	if want("container") {
		l.Containers = nonNil(du.Containers)
	}
	if want("volume") {
		l.Volumes = nonNil(du.Volumes)
	}
	if want("build-cache") {
		l.BuildCache = nonNil(cache)
	}
	return l
}

// imageUsage: what is not reclaimable is the images containers use, less
// what they share with others (the docker CLI's reckoning). The usages
// carry their lists as Items: Docker computes them for verbose and for the
// legacy lists alike, so it sends them either way.
func imageUsage(du engine.DiskUsage) *image.DiskUsage {
	u := &image.DiskUsage{TotalCount: int64(len(du.Images)), TotalSize: du.LayersSize}
	var used int64
	for _, img := range du.Images {
		if img.Containers > 0 {
			u.ActiveCount++
			if img.Size >= 0 && img.SharedSize >= 0 {
				used += img.Size - img.SharedSize
			}
		}
	}
	u.Reclaimable = max(u.TotalSize-used, 0)
	u.Items = du.Images
	return u
}

// buildCacheUsage totals BuildKit's cache records as Docker does: shared
// records are counted in the records they share with, and reclaimable
// are those no build uses.
func buildCacheUsage(cache []build.CacheRecord) *build.DiskUsage {
	u := &build.DiskUsage{}
	u.TotalCount, u.ActiveCount, u.TotalSize, u.Reclaimable = totals(cache, func(c build.CacheRecord) (int64, bool, bool) {
		return c.Size, c.InUse, !c.Shared
	})
	u.Items = cache
	return u
}

func containerUsage(du engine.DiskUsage) *container.DiskUsage {
	u := &container.DiskUsage{}
	u.TotalCount, u.ActiveCount, u.TotalSize, u.Reclaimable = totals(du.Containers, func(c container.Summary) (int64, bool, bool) {
		return c.SizeRw, c.State == container.StateRunning, true
	})
	u.Items = du.Containers
	return u
}

func volumeUsage(du engine.DiskUsage) *volume.DiskUsage {
	u := &volume.DiskUsage{}
	u.TotalCount, u.ActiveCount, u.TotalSize, u.Reclaimable = totals(du.Volumes, func(v volume.Volume) (int64, bool, bool) {
		if v.UsageData == nil || v.UsageData.Size < 0 {
			return 0, false, false
		}
		return v.UsageData.Size, v.UsageData.RefCount > 0, true
	})
	u.Items = du.Volumes
	return u
}

// totals counts items, the active ones, and sums the sizes of those whose
// size is known: all, and the inactive ones' (reclaimable).
func totals[T any](items []T, sizeOf func(T) (size int64, active, known bool)) (count, active, size, reclaimable int64) {
	for _, it := range items {
		count++
		n, a, ok := sizeOf(it)
		if a {
			active++
		}
		if !ok {
			continue
		}
		size += n
		if !a {
			reclaimable += n
		}
	}
	return count, active, size, reclaimable
}

// buildPrune answers POST /build/prune, which docker system prune calls:
// BuildKit prunes its cache; an engine that never built has none.
func (s *Server) buildPrune(w http.ResponseWriter, r *http.Request) error {
	if s.buildkit != nil && s.buildkit.HasState() {
		return s.buildkit.Forward(w, r)
	}
	return writeJSON(w, http.StatusOK, build.CachePruneReport{CachesDeleted: []string{}})
}
