package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/containerd/errdefs"
	"github.com/hutch-engine/hutch/engine"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/api/types/volume"
)

// DiskUsageBackend serves GET /system/df.
type DiskUsageBackend interface {
	SystemDiskUsage(ctx context.Context) (engine.DiskUsage, error)
}

// legacyDiskUsage is /system/df before API 1.52: the lists, which the
// client sums up.
type legacyDiskUsage struct {
	LayersSize int64
	Images     []image.Summary
	Containers []container.Summary
	Volumes    []volume.Volume
	BuildCache []build.CacheRecord
}

// systemDF answers GET /system/df: the lists before API 1.52, and from it
// the totals per type (of those asked for with type=), with the lists only
// when verbose.
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
	if versionLess(APIVersion(r.Context()), "1.52") {
		return writeJSON(w, http.StatusOK, legacyDiskUsage{
			LayersSize: du.LayersSize, Images: du.Images, Containers: du.Containers, Volumes: du.Volumes,
			BuildCache: []build.CacheRecord{},
		})
	}
	want := func(t string) bool { return len(types) == 0 || slices.Contains(types, t) }
	verbose := queryBool(r, "verbose")
	var out system.DiskUsage
	if want("image") {
		out.ImageUsage = imageUsage(du, verbose)
	}
	if want("container") {
		out.ContainerUsage = containerUsage(du, verbose)
	}
	if want("volume") {
		out.VolumeUsage = volumeUsage(du, verbose)
	}
	if want("build-cache") {
		out.BuildCacheUsage = &build.DiskUsage{}
	}
	return writeJSON(w, http.StatusOK, out)
}

// imageUsage: what is not reclaimable is the images containers use, less
// what they share with others (the docker CLI's reckoning).
func imageUsage(du engine.DiskUsage, verbose bool) *image.DiskUsage {
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
	if verbose {
		u.Items = du.Images
	}
	return u
}

func containerUsage(du engine.DiskUsage, verbose bool) *container.DiskUsage {
	u := &container.DiskUsage{}
	u.TotalCount, u.ActiveCount, u.TotalSize, u.Reclaimable = totals(du.Containers, func(c container.Summary) (int64, bool, bool) {
		return c.SizeRw, c.State == container.StateRunning, true
	})
	if verbose {
		u.Items = du.Containers
	}
	return u
}

func volumeUsage(du engine.DiskUsage, verbose bool) *volume.DiskUsage {
	u := &volume.DiskUsage{}
	u.TotalCount, u.ActiveCount, u.TotalSize, u.Reclaimable = totals(du.Volumes, func(v volume.Volume) (int64, bool, bool) {
		if v.UsageData == nil || v.UsageData.Size < 0 {
			return 0, false, false
		}
		return v.UsageData.Size, v.UsageData.RefCount > 0, true
	})
	if verbose {
		u.Items = du.Volumes
	}
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
// hutch builds nothing, so there is no cache to prune.
func (s *Server) buildPrune(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, build.CachePruneReport{CachesDeleted: []string{}})
}
