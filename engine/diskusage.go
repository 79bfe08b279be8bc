package engine

import (
	"context"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	volumetypes "github.com/moby/moby/api/types/volume"

	"github.com/hutch-engine/hutch/engine/images"
)

// DiskUsage is what GET /system/df reports: every image, container and
// volume with its size. hutch has no build cache.
type DiskUsage struct {
	// LayersSize is the size of the images' layers, each counted once.
	LayersSize int64
	// Images have their shared sizes and how many containers use them.
	Images []image.Summary
	// Containers have SizeRw and SizeRootFs.
	Containers []containertypes.Summary
	// Volumes have UsageData: their size and how many containers mount
	// them.
	Volumes []volumetypes.Volume
}

// SystemDiskUsage answers GET /system/df (docker system df).
func (e *Engine) SystemDiskUsage(ctx context.Context) (DiskUsage, error) {
	var du DiskUsage
	store, err := e.imageStore()
	if err != nil {
		return du, err
	}
	imgs, err := store.ListImages(ctx)
	if err != nil {
		return du, err
	}
	seen := map[string]bool{}
	for _, img := range imgs {
		for _, l := range img.Layers {
			if !seen[l.ID] {
				seen[l.ID] = true
				du.LayersSize += l.Size
			}
		}
	}
	if du.Images, err = e.ImageList(ctx, images.ListRequest{All: true, SharedSize: true}); err != nil {
		return du, err
	}
	if du.Containers, err = e.ContainerList(ctx, ListRequest{All: true}); err != nil {
		return du, err
	}
	for i := range du.Containers {
		// As Docker: a size that cannot be had is left at 0.
		if rw, rootfs, err := e.ContainerSize(ctx, du.Containers[i].ID); err == nil {
			du.Containers[i].SizeRw, du.Containers[i].SizeRootFs = rw, rootfs
		}
	}
	vs, used, err := e.volumesAndUsers(ctx)
	if err != nil {
		return du, err
	}
	du.Volumes = []volumetypes.Volume{}
	for _, v := range vs {
		av := apiVolume(v)
		av.UsageData = &volumetypes.UsageData{Size: -1, RefCount: int64(len(used[v.Name]))}
		if n, err := e.volumes.Size(v.Name); err == nil {
			av.UsageData.Size = n
		}
		du.Volumes = append(du.Volumes, av)
	}
	return du, nil
}
