package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
	swarmapi "github.com/moby/swarmkit/v2/api"

	"github.com/hutch-engine/hutch/swarm/convert"
	"github.com/hutch-engine/hutch/swarm/executor"
)

// A service's networks are the engine's own (node-local bridge) networks,
// not SwarmKit's: SwarmKit's are overlays, which a rootless engine cannot
// make. hutch-swarm checks each against the engine, keeps them in a label
// of the service (SwarmKit's network allocator is left with nothing to
// allocate), and the executor attaches each task to them with the
// service's name as a DNS alias, so tasks on one node find each other
// by it (docs/swarm.md).

// localNetworks checks a spec's network attachments against the engine
// and records them in gs's label; the attachments themselves are taken
// out of what SwarmKit stores.
func (s *server) localNetworks(ctx context.Context, spec swarm.ServiceSpec, gs *swarmapi.ServiceSpec) error {
	nets := spec.TaskTemplate.Networks
	if len(nets) == 0 {
		return nil
	}
	var out []executor.LocalNetwork
	for _, n := range nets {
		if len(n.DriverOpts) > 0 {
			return errdefs.ErrInvalidArgument.WithMessage("driver options on a service's network attachment are not supported")
		}
		res, err := s.c.engine.NetworkInspect(ctx, n.Target, client.NetworkInspectOptions{})
		if errdefs.IsNotFound(err) {
			return errdefs.ErrNotFound.WithMessage(fmt.Sprintf("network %s not found", n.Target))
		} else if err != nil {
			return err
		}
		switch res.Network.Driver {
		case "bridge":
		case "host", "null":
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("network %s: services run on bridge networks (the %s network is not supported)", n.Target, res.Network.Driver))
		default:
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("network %s: driver %s is not supported", n.Target, res.Network.Driver))
		}
		out = append(out, executor.LocalNetwork{ID: res.Network.ID, Name: res.Network.Name, Aliases: n.Aliases})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if gs.Annotations.Labels == nil {
		gs.Annotations.Labels = map[string]string{}
	}
	gs.Annotations.Labels[executor.NetworksLabel] = string(b)
	return nil
}

// serviceOut is a service as Docker shows it: the networks label back
// as the task template's networks.
func serviceOut(svc *swarmapi.Service) swarm.Service {
	out := convert.ServiceFromGRPC(svc)
	out.Spec.TaskTemplate.Networks = attachmentsOut(&out.Spec.Annotations)
	if out.PreviousSpec != nil {
		out.PreviousSpec.TaskTemplate.Networks = attachmentsOut(&out.PreviousSpec.Annotations)
	}
	return out
}

func attachmentsOut(a *swarm.Annotations) []swarm.NetworkAttachmentConfig {
	v, ok := a.Labels[executor.NetworksLabel]
	if !ok {
		return nil
	}
	delete(a.Labels, executor.NetworksLabel)
	var out []swarm.NetworkAttachmentConfig
	for _, n := range executor.ParseNetworks(v) {
		out = append(out, swarm.NetworkAttachmentConfig{Target: n.ID, Aliases: n.Aliases})
	}
	return out
}

// networkRemove removes a network made for the swarm: refused while a
// service uses it; the containers of tasks that are stopping are waited
// for (docker stack rm removes the services, then at once the network).
func (s *server) networkRemove(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	svcs, err := ctl.ListServices(r.Context(), &swarmapi.ListServicesRequest{})
	if err != nil {
		return err
	}
	for _, svc := range svcs.Services {
		for _, n := range executor.ParseNetworks(svc.Spec.Annotations.Labels[executor.NetworksLabel]) {
			if n.ID == id {
				// SwarmKit's FailedPrecondition for a network in use, which
				// Docker answers 400.
				return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("network %s is in use by service %s", n.Name, svc.Spec.Annotations.Name))
			}
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	for {
		_, err := s.c.engine.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		if err == nil {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		if !errdefs.IsConflict(err) && !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		if !s.onlyTasksOn(ctx, id) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// onlyTasksOn reports whether every container on network id is a task's.
func (s *server) onlyTasksOn(ctx context.Context, id string) bool {
	res, err := s.c.engine.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return false
	}
	for cid := range res.Network.Containers {
		ct, err := s.c.engine.ContainerInspect(ctx, cid, client.ContainerInspectOptions{})
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil || ct.Container.Config == nil || ct.Container.Config.Labels[executor.LabelTaskID] == "" {
			return false
		}
	}
	return true
}
