package swarm

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"
	"github.com/moby/swarmkit/v2/api/defaults"

	"github.com/hutch-engine/hutch/swarm/convert"
	"github.com/hutch-engine/hutch/swarm/executor"
)

// resolveService finds a service by ID, name or ID prefix, as Docker does.
func resolveService(ctx context.Context, ctl api.ControlClient, ref string) (*api.Service, error) {
	if s, err := ctl.GetService(ctx, &api.GetServiceRequest{ServiceID: ref}); err == nil {
		return s.Service, nil
	}
	r, err := ctl.ListServices(ctx, &api.ListServicesRequest{Filters: &api.ListServicesRequest_Filters{Names: []string{ref}}})
	if err != nil {
		return nil, err
	}
	if len(r.Services) == 0 {
		if r, err = ctl.ListServices(ctx, &api.ListServicesRequest{Filters: &api.ListServicesRequest_Filters{IDPrefixes: []string{ref}}}); err != nil {
			return nil, err
		}
	}
	switch len(r.Services) {
	case 0:
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("service %s not found", ref))
	case 1:
		return r.Services[0], nil
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("service %s is ambiguous (%d matches found)", ref, len(r.Services)))
}

func (s *server) serviceList(w http.ResponseWriter, r *http.Request) error {
	f, err := convert.ParseFilters(r.URL.Query().Get("filters"), "id", "label", "mode", "name", "runtime")
	if err != nil {
		return err
	}
	for _, m := range f["mode"] {
		if m != "replicated" && m != "global" && m != "replicated-job" && m != "global-job" {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid filter: 'mode'='%s'", m))
		}
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.ListServices(r.Context(), &api.ListServicesRequest{Filters: &api.ListServicesRequest_Filters{
		NamePrefixes: f["name"], IDPrefixes: f["id"], Labels: f.Labels("label"), Runtimes: f["runtime"],
	}})
	if err != nil {
		return err
	}
	out := []swarm.Service{}
	for _, svc := range resp.Services {
		if len(f["mode"]) > 0 && !contains(f["mode"], serviceMode(svc)) {
			continue
		}
		out = append(out, serviceOut(svc))
	}
	if boolQuery(r, "status") {
		if err := s.fillStatus(r.Context(), ctl, out); err != nil {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func contains(l []string, v string) bool {
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

func serviceMode(s *api.Service) string {
	switch s.Spec.Mode.(type) {
	case *api.ServiceSpec_Global:
		return "global"
	case *api.ServiceSpec_ReplicatedJob:
		return "replicated-job"
	case *api.ServiceSpec_GlobalJob:
		return "global-job"
	}
	return "replicated"
}

// fillStatus counts each service's running, desired and completed tasks
// (`docker service ls`'s REPLICAS), as Docker does: running tasks on
// nodes that are not down; for global services one desired task per
// task meant to run.
func (s *server) fillStatus(ctx context.Context, ctl api.ControlClient, svcs []swarm.Service) error {
	nodes, err := ctl.ListNodes(ctx, &api.ListNodesRequest{})
	if err != nil {
		return err
	}
	down := map[string]bool{}
	for _, n := range nodes.Nodes {
		down[n.ID] = n.Status.State == api.NodeStatus_DOWN
	}
	for i := range svcs {
		svc := &svcs[i]
		tasks, err := ctl.ListTasks(ctx, &api.ListTasksRequest{Filters: &api.ListTasksRequest_Filters{ServiceIDs: []string{svc.ID}}})
		if err != nil {
			return err
		}
		st := &swarm.ServiceStatus{}
		for _, t := range tasks.Tasks {
			if t.DesiredState == api.TaskStateRunning && svc.Spec.Mode.Global != nil {
				st.DesiredTasks++
			}
			if t.Status.State == api.TaskStateRunning && !down[t.NodeID] {
				st.RunningTasks++
			}
			if t.Status.State == api.TaskStateCompleted {
				st.CompletedTasks++
			}
		}
		switch m := svc.Spec.Mode; {
		case m.Replicated != nil && m.Replicated.Replicas != nil:
			st.DesiredTasks = *m.Replicated.Replicas
		case m.ReplicatedJob != nil && m.ReplicatedJob.MaxConcurrent != nil:
			st.DesiredTasks = *m.ReplicatedJob.MaxConcurrent
		}
		svc.ServiceStatus = st
	}
	return nil
}

// serviceSpec decodes and converts a create or update request's spec;
// nothing is made from a bad one.
func (s *server) serviceSpec(r *http.Request) (api.ServiceSpec, error) {
	var spec swarm.ServiceSpec
	if err := decode(r, &spec); err != nil {
		return api.ServiceSpec{}, err
	}
	if _, ok := spec.Labels[executor.NetworksLabel]; ok {
		return api.ServiceSpec{}, errdefs.ErrInvalidArgument.WithMessage("label " + executor.NetworksLabel + " is hutch's own")
	}
	gs, err := convert.ServiceSpecToGRPC(spec)
	if err != nil {
		return api.ServiceSpec{}, err
	}
	if err := s.localNetworks(r.Context(), spec, &gs); err != nil {
		return api.ServiceSpec{}, err
	}
	if c := gs.Task.GetContainer(); c != nil {
		if auth := r.Header.Get("X-Registry-Auth"); auth != "" {
			c.PullOptions = &api.ContainerSpec_PullOptions{RegistryAuth: auth}
		}
	}
	return gs, nil
}

func (s *server) serviceCreate(w http.ResponseWriter, r *http.Request) error {
	gs, err := s.serviceSpec(r)
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	resp, err := ctl.CreateService(r.Context(), &api.CreateServiceRequest{Spec: &gs})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, swarm.ServiceCreateResponse{ID: resp.Service.ID, Warnings: []string{}})
}

func (s *server) serviceInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	svc, err := resolveService(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if boolQuery(r, "insertDefaults") {
		svc = svc.Copy()
		svc.Spec = *defaults.InterpolateService(&svc.Spec)
	}
	return writeJSON(w, http.StatusOK, serviceOut(svc))
}

func (s *server) serviceUpdate(w http.ResponseWriter, r *http.Request) error {
	v, err := version(r, "service")
	if err != nil {
		return err
	}
	gs, err := s.serviceSpec(r)
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	cur, err := resolveService(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	req := &api.UpdateServiceRequest{ServiceID: cur.ID, ServiceVersion: &api.Version{Index: v}, Spec: &gs}
	switch q := r.URL.Query().Get("rollback"); q {
	case "previous":
		if cur.PreviousSpec == nil {
			return errdefs.ErrInvalidArgument.WithMessage("service does not have a previous spec")
		}
		req.Rollback = api.UpdateServiceRequest_PREVIOUS
	case "":
	default:
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("unrecognized rollback option %s", q))
	}
	// Without new credentials, those of the spec named keep pulling.
	if c := gs.Task.GetContainer(); c != nil && c.PullOptions == nil {
		from := cur.Spec
		if r.URL.Query().Get("registryAuthFrom") == string(swarm.RegistryAuthFromPreviousSpec) && cur.PreviousSpec != nil {
			from = *cur.PreviousSpec
		}
		if pc := from.Task.GetContainer(); pc != nil && pc.PullOptions != nil {
			c.PullOptions = pc.PullOptions
		}
	}
	if _, err := ctl.UpdateService(r.Context(), req); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, swarm.ServiceUpdateResponse{Warnings: []string{}})
}

func (s *server) serviceRemove(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	svc, err := resolveService(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.RemoveService(r.Context(), &api.RemoveServiceRequest{ServiceID: svc.ID}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) taskList(w http.ResponseWriter, r *http.Request) error {
	f, err := convert.ParseFilters(r.URL.Query().Get("filters"), "name", "id", "label", "service", "node", "desired-state", "_up-to-date", "runtime")
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	gf := &api.ListTasksRequest_Filters{
		NamePrefixes: f["name"], IDPrefixes: f["id"], Labels: f.Labels("label"),
		UpToDate: len(f["_up-to-date"]) > 0, Runtimes: f["runtime"],
	}
	for _, ref := range f["service"] {
		svc, err := resolveService(r.Context(), ctl, ref)
		if errdefs.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		gf.ServiceIDs = append(gf.ServiceIDs, svc.ID)
	}
	if len(f["service"]) > 0 && len(gf.ServiceIDs) == 0 {
		return writeJSON(w, http.StatusOK, []swarm.Task{})
	}
	for _, ref := range f["node"] {
		n, err := s.resolveNode(r.Context(), ctl, ref)
		if errdefs.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		gf.NodeIDs = append(gf.NodeIDs, n.ID)
	}
	if len(f["node"]) > 0 && len(gf.NodeIDs) == 0 {
		return writeJSON(w, http.StatusOK, []swarm.Task{})
	}
	for _, st := range f["desired-state"] {
		v, ok := convert.TaskStateToGRPC(st)
		if !ok || (v != api.TaskStateRunning && v != api.TaskStateShutdown && v != api.TaskStateAccepted) {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid desired-state filter value: %s", strings.ToLower(st)))
		}
		gf.DesiredStates = append(gf.DesiredStates, v)
	}
	resp, err := ctl.ListTasks(r.Context(), &api.ListTasksRequest{Filters: gf})
	if err != nil {
		return err
	}
	out := []swarm.Task{}
	for _, t := range resp.Tasks {
		out = append(out, convert.TaskFromGRPC(t))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *server) taskInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	t, err := resolveTask(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, convert.TaskFromGRPC(t))
}

// resolveTask finds a task by ID or ID prefix.
func resolveTask(ctx context.Context, ctl api.ControlClient, ref string) (*api.Task, error) {
	if t, err := ctl.GetTask(ctx, &api.GetTaskRequest{TaskID: ref}); err == nil {
		return t.Task, nil
	}
	r, err := ctl.ListTasks(ctx, &api.ListTasksRequest{Filters: &api.ListTasksRequest_Filters{IDPrefixes: []string{ref}}})
	if err != nil {
		return nil, err
	}
	switch len(r.Tasks) {
	case 0:
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("task %s not found", ref))
	case 1:
		return r.Tasks[0], nil
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("task %s is ambiguous (%d matches found)", ref, len(r.Tasks)))
}
