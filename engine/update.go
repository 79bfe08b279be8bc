package engine

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/container"
)

// ContainerUpdate answers POST /containers/{id}/update (docker update):
// the resources given (the fields left at zero keep their value, as in
// Docker) and the restart policy, if one is given, go into the record.
// Where limits cannot be enforced (rootless on cgroup v1) the answer's
// warnings say so, as at create; the limits apply from the next start.
func (e *Engine) ContainerUpdate(ctx context.Context, ref string, u containertypes.UpdateConfig) (containertypes.UpdateResponse, error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return containertypes.UpdateResponse{}, err
	}
	if u.RestartPolicy.Name != "" {
		if err := checkRestartPolicy(u.RestartPolicy); err != nil {
			return containertypes.UpdateResponse{}, err
		}
	}
	if u.NanoCPUs > 0 && (u.CPUPeriod > 0 || u.CPUQuota > 0) {
		return containertypes.UpdateResponse{}, errdefs.ErrInvalidArgument.WithMessage("Conflicting options: Nano CPUs cannot be updated as CPU Period/Quota has already been set")
	}
	if u.Memory > 0 && u.Memory < minMemory {
		return containertypes.UpdateResponse{}, errdefs.ErrInvalidArgument.WithMessage("Minimum memory limit allowed is 6MB")
	}
	if c.State.Running() && e.host.CgroupLimits && limitsGiven(u.Resources) {
		// The cgroup of a running container would need the runtime.
		return containertypes.UpdateResponse{}, errdefs.ErrNotImplemented.WithMessage(fmt.Sprintf("updating the resources of running container %s is not supported yet: stop it first", c.ID))
	}
	var hc containertypes.HostConfig
	err = e.containers.Update(ctx, c.ID, func(r *container.Container) error {
		if r.HostConfig == nil {
			r.HostConfig = &containertypes.HostConfig{}
		}
		if u.RestartPolicy.Name != "" {
			if r.HostConfig.AutoRemove && !u.RestartPolicy.IsNone() {
				return cannotUpdate(c.ID, "Restart policy cannot be updated because AutoRemove is enabled for the container")
			}
			r.HostConfig.RestartPolicy = u.RestartPolicy
		}
		res := &r.HostConfig.Resources
		if u.Memory > 0 && u.MemorySwap == 0 && res.MemorySwap > 0 && u.Memory > res.MemorySwap {
			return cannotUpdate(c.ID, "Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time")
		}
		mergeResources(res, u.Resources)
		hc = *r.HostConfig
		return nil
	})
	if err != nil {
		return containertypes.UpdateResponse{}, err
	}
	e.containerEvent(c, eventtypes.ActionUpdate, nil)
	w := e.createWarnings(&hc)
	if w == nil {
		w = []string{}
	}
	return containertypes.UpdateResponse{Warnings: w}, nil
}

// cannotUpdate is an update that conflicts with what the container
// already has: Docker's Conflict (409), with its words.
func cannotUpdate(id, why string) error {
	return errdefs.ErrConflict.WithMessage(fmt.Sprintf("Cannot update container %s: %s", id, why))
}

// minMemory is Docker's smallest memory limit.
const minMemory = 6 * 1024 * 1024

// limitsGiven reports whether u sets any cgroup limit.
func limitsGiven(u containertypes.Resources) bool {
	return u.Memory != 0 || u.MemoryReservation != 0 || u.MemorySwap != 0 || u.NanoCPUs != 0 ||
		u.CPUShares != 0 || u.CPUPeriod != 0 || u.CPUQuota != 0 || u.CpusetCpus != "" || u.CpusetMems != "" ||
		u.BlkioWeight != 0 || u.PidsLimit != nil || u.CPURealtimePeriod != 0 || u.CPURealtimeRuntime != 0
}

// mergeResources sets in r what u gives, as Docker's update does: a field
// left at zero keeps its value.
func mergeResources(r *containertypes.Resources, u containertypes.Resources) {
	set := func(dst *int64, v int64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&r.Memory, u.Memory)
	set(&r.MemoryReservation, u.MemoryReservation)
	set(&r.MemorySwap, u.MemorySwap)
	set(&r.CPUShares, u.CPUShares)
	set(&r.CPUPeriod, u.CPUPeriod)
	set(&r.CPUQuota, u.CPUQuota)
	set(&r.CPURealtimePeriod, u.CPURealtimePeriod)
	set(&r.CPURealtimeRuntime, u.CPURealtimeRuntime)
	if u.NanoCPUs != 0 {
		// NanoCPUs and a period or quota exclude each other.
		r.NanoCPUs, r.CPUPeriod, r.CPUQuota = u.NanoCPUs, 0, 0
	}
	if u.CpusetCpus != "" {
		r.CpusetCpus = u.CpusetCpus
	}
	if u.CpusetMems != "" {
		r.CpusetMems = u.CpusetMems
	}
	if u.BlkioWeight != 0 {
		r.BlkioWeight = u.BlkioWeight
	}
	if u.PidsLimit != nil {
		r.PidsLimit = u.PidsLimit
	}
}
