// Package convert maps Docker's swarm API types (what clients send and
// read) to SwarmKit's and back, and refuses what hutch's swarm mode
// cannot do. Errors it returns are errdefs.ErrInvalidArgument: a bad
// request, answered 400 before anything is made.
package convert

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	gogotypes "github.com/gogo/protobuf/types"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"
)

// invalid is a 400 with msg as Docker words it.
func invalid(format string, a ...any) error {
	return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(format, a...))
}

// ErrIngress refuses a port published through the routing mesh: it needs
// an overlay network and IPVS in the kernel, which a rootless engine has
// no rights to.
var ErrIngress = errdefs.ErrInvalidArgument.WithMessage("hutch's rootless swarm mode has no ingress routing mesh: publish the port on the node with mode=host (docker service create --publish mode=host,published=8080,target=80)")

// ServiceSpecToGRPC is spec as SwarmKit stores it. Networks are resolved
// by the caller (a node-local network's name), so they are left out.
func ServiceSpecToGRPC(s swarm.ServiceSpec) (api.ServiceSpec, error) {
	out := api.ServiceSpec{Annotations: annotationsToGRPC(s.Annotations)}
	task, err := TaskSpecToGRPC(s.TaskTemplate)
	if err != nil {
		return api.ServiceSpec{}, err
	}
	out.Task = task
	switch {
	case s.Mode.Global != nil:
		out.Mode = &api.ServiceSpec_Global{Global: &api.GlobalService{}}
	case s.Mode.ReplicatedJob != nil:
		j := &api.ReplicatedJob{MaxConcurrent: 1, TotalCompletions: 1}
		if s.Mode.ReplicatedJob.MaxConcurrent != nil {
			j.MaxConcurrent = *s.Mode.ReplicatedJob.MaxConcurrent
		}
		if s.Mode.ReplicatedJob.TotalCompletions != nil {
			j.TotalCompletions = *s.Mode.ReplicatedJob.TotalCompletions
		}
		out.Mode = &api.ServiceSpec_ReplicatedJob{ReplicatedJob: j}
	case s.Mode.GlobalJob != nil:
		out.Mode = &api.ServiceSpec_GlobalJob{GlobalJob: &api.GlobalJob{}}
	default:
		r := uint64(1)
		if s.Mode.Replicated != nil && s.Mode.Replicated.Replicas != nil {
			r = *s.Mode.Replicated.Replicas
		}
		out.Mode = &api.ServiceSpec_Replicated{Replicated: &api.ReplicatedService{Replicas: r}}
	}
	if out.Update, err = updateConfigToGRPC(s.UpdateConfig); err != nil {
		return api.ServiceSpec{}, err
	}
	if out.Rollback, err = updateConfigToGRPC(s.RollbackConfig); err != nil {
		return api.ServiceSpec{}, err
	}
	if out.Endpoint, err = endpointSpecToGRPC(s.EndpointSpec); err != nil {
		return api.ServiceSpec{}, err
	}
	return out, nil
}

func annotationsToGRPC(a swarm.Annotations) api.Annotations {
	return api.Annotations{Name: a.Name, Labels: a.Labels}
}

// annotationsFromGRPC copies the labels: callers take hutch's own out.
func annotationsFromGRPC(a api.Annotations) swarm.Annotations {
	labels := maps.Clone(a.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	return swarm.Annotations{Name: a.Name, Labels: labels}
}

func updateConfigToGRPC(u *swarm.UpdateConfig) (*api.UpdateConfig, error) {
	if u == nil {
		return nil, nil
	}
	out := &api.UpdateConfig{Parallelism: u.Parallelism, Delay: u.Delay, MaxFailureRatio: u.MaxFailureRatio}
	switch u.FailureAction {
	case swarm.UpdateFailureActionPause, "":
		out.FailureAction = api.UpdateConfig_PAUSE
	case swarm.UpdateFailureActionContinue:
		out.FailureAction = api.UpdateConfig_CONTINUE
	case swarm.UpdateFailureActionRollback:
		out.FailureAction = api.UpdateConfig_ROLLBACK
	default:
		return nil, invalid("unrecognized update failure action %s", u.FailureAction)
	}
	switch u.Order {
	case swarm.UpdateOrderStopFirst, "":
		out.Order = api.UpdateConfig_STOP_FIRST
	case swarm.UpdateOrderStartFirst:
		out.Order = api.UpdateConfig_START_FIRST
	default:
		return nil, invalid("unrecognized update order %s", u.Order)
	}
	if u.Monitor != 0 {
		out.Monitor = gogotypes.DurationProto(u.Monitor)
	}
	return out, nil
}

func updateConfigFromGRPC(u *api.UpdateConfig) *swarm.UpdateConfig {
	if u == nil {
		return nil
	}
	out := &swarm.UpdateConfig{Parallelism: u.Parallelism, Delay: u.Delay, MaxFailureRatio: u.MaxFailureRatio}
	switch u.FailureAction {
	case api.UpdateConfig_PAUSE:
		out.FailureAction = swarm.UpdateFailureActionPause
	case api.UpdateConfig_CONTINUE:
		out.FailureAction = swarm.UpdateFailureActionContinue
	case api.UpdateConfig_ROLLBACK:
		out.FailureAction = swarm.UpdateFailureActionRollback
	}
	switch u.Order {
	case api.UpdateConfig_STOP_FIRST:
		out.Order = swarm.UpdateOrderStopFirst
	case api.UpdateConfig_START_FIRST:
		out.Order = swarm.UpdateOrderStartFirst
	}
	if u.Monitor != nil {
		out.Monitor, _ = gogotypes.DurationFromProto(u.Monitor)
	}
	return out
}

func endpointSpecToGRPC(e *swarm.EndpointSpec) (*api.EndpointSpec, error) {
	if e == nil {
		return nil, nil
	}
	out := &api.EndpointSpec{}
	switch e.Mode {
	case swarm.ResolutionModeVIP, "":
		out.Mode = api.ResolutionModeVirtualIP
	case swarm.ResolutionModeDNSRR:
		out.Mode = api.ResolutionModeDNSRoundRobin
	default:
		return nil, invalid("invalid resolution mode: %q", e.Mode)
	}
	for _, p := range e.Ports {
		pc, err := portToGRPC(p)
		if err != nil {
			return nil, err
		}
		out.Ports = append(out.Ports, pc)
	}
	return out, nil
}

func portToGRPC(p swarm.PortConfig) (*api.PortConfig, error) {
	out := &api.PortConfig{Name: p.Name, TargetPort: p.TargetPort, PublishedPort: p.PublishedPort}
	switch strings.ToLower(string(p.Protocol)) {
	case "tcp", "":
		out.Protocol = api.ProtocolTCP
	case "udp":
		out.Protocol = api.ProtocolUDP
	case "sctp":
		out.Protocol = api.ProtocolSCTP
	default:
		return nil, invalid("unknown protocol: %s", p.Protocol)
	}
	switch p.PublishMode {
	case swarm.PortConfigPublishModeHost:
		out.PublishMode = api.PublishModeHost
	case swarm.PortConfigPublishModeIngress, "":
		return nil, ErrIngress
	default:
		return nil, invalid("unknown publish mode: %s", p.PublishMode)
	}
	if p.TargetPort == 0 || p.TargetPort > 65535 || p.PublishedPort > 65535 {
		return nil, invalid("invalid port: target %d, published %d", p.TargetPort, p.PublishedPort)
	}
	return out, nil
}

func portFromGRPC(p *api.PortConfig) swarm.PortConfig {
	out := swarm.PortConfig{Name: p.Name, TargetPort: p.TargetPort, PublishedPort: p.PublishedPort}
	out.Protocol = "tcp"
	switch p.Protocol {
	case api.ProtocolUDP:
		out.Protocol = "udp"
	case api.ProtocolSCTP:
		out.Protocol = "sctp"
	}
	out.PublishMode = swarm.PortConfigPublishModeIngress
	if p.PublishMode == api.PublishModeHost {
		out.PublishMode = swarm.PortConfigPublishModeHost
	}
	return out
}

func fromDuration(d *gogotypes.Duration) time.Duration {
	if d == nil {
		return 0
	}
	v, _ := gogotypes.DurationFromProto(d)
	return v
}

func fromTimestamp(t *gogotypes.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	v, _ := gogotypes.TimestampFromProto(t)
	return v
}

func metaFromGRPC(m api.Meta) swarm.Meta {
	return swarm.Meta{Version: swarm.Version{Index: m.Version.Index}, CreatedAt: fromTimestamp(m.CreatedAt), UpdatedAt: fromTimestamp(m.UpdatedAt)}
}

// ServiceFromGRPC is the service as Docker shows it.
func ServiceFromGRPC(s *api.Service) swarm.Service {
	out := swarm.Service{ID: s.ID, Meta: metaFromGRPC(s.Meta), Spec: ServiceSpecFromGRPC(s.Spec)}
	if s.PreviousSpec != nil {
		ps := ServiceSpecFromGRPC(*s.PreviousSpec)
		out.PreviousSpec = &ps
	}
	if e := s.Endpoint; e != nil {
		if e.Spec != nil {
			out.Endpoint.Spec = *endpointSpecFromGRPC(e.Spec)
		}
		for _, p := range e.Ports {
			out.Endpoint.Ports = append(out.Endpoint.Ports, portFromGRPC(p))
		}
	}
	if u := s.UpdateStatus; u != nil {
		us := &swarm.UpdateStatus{Message: u.Message}
		switch u.State {
		case api.UpdateStatus_UPDATING:
			us.State = swarm.UpdateStateUpdating
		case api.UpdateStatus_PAUSED:
			us.State = swarm.UpdateStatePaused
		case api.UpdateStatus_COMPLETED:
			us.State = swarm.UpdateStateCompleted
		case api.UpdateStatus_ROLLBACK_STARTED:
			us.State = swarm.UpdateStateRollbackStarted
		case api.UpdateStatus_ROLLBACK_PAUSED:
			us.State = swarm.UpdateStateRollbackPaused
		case api.UpdateStatus_ROLLBACK_COMPLETED:
			us.State = swarm.UpdateStateRollbackCompleted
		}
		if u.StartedAt != nil {
			t := fromTimestamp(u.StartedAt)
			us.StartedAt = &t
		}
		if u.CompletedAt != nil {
			t := fromTimestamp(u.CompletedAt)
			us.CompletedAt = &t
		}
		out.UpdateStatus = us
	}
	if s.JobStatus != nil {
		out.JobStatus = &swarm.JobStatus{JobIteration: swarm.Version{Index: s.JobStatus.JobIteration.Index}, LastExecution: fromTimestamp(s.JobStatus.LastExecution)}
	}
	return out
}

// ServiceSpecFromGRPC is a stored spec as Docker shows it.
func ServiceSpecFromGRPC(s api.ServiceSpec) swarm.ServiceSpec {
	out := swarm.ServiceSpec{
		Annotations:    annotationsFromGRPC(s.Annotations),
		TaskTemplate:   TaskSpecFromGRPC(s.Task),
		UpdateConfig:   updateConfigFromGRPC(s.Update),
		RollbackConfig: updateConfigFromGRPC(s.Rollback),
	}
	switch m := s.Mode.(type) {
	case *api.ServiceSpec_Replicated:
		r := m.Replicated.Replicas
		out.Mode.Replicated = &swarm.ReplicatedService{Replicas: &r}
	case *api.ServiceSpec_Global:
		out.Mode.Global = &swarm.GlobalService{}
	case *api.ServiceSpec_ReplicatedJob:
		mc, tc := m.ReplicatedJob.MaxConcurrent, m.ReplicatedJob.TotalCompletions
		out.Mode.ReplicatedJob = &swarm.ReplicatedJob{MaxConcurrent: &mc, TotalCompletions: &tc}
	case *api.ServiceSpec_GlobalJob:
		out.Mode.GlobalJob = &swarm.GlobalJob{}
	}
	if s.Endpoint != nil {
		out.EndpointSpec = endpointSpecFromGRPC(s.Endpoint)
	}
	return out
}

func endpointSpecFromGRPC(e *api.EndpointSpec) *swarm.EndpointSpec {
	out := &swarm.EndpointSpec{Mode: swarm.ResolutionModeVIP}
	if e.Mode == api.ResolutionModeDNSRoundRobin {
		out.Mode = swarm.ResolutionModeDNSRR
	}
	for _, p := range e.Ports {
		out.Ports = append(out.Ports, portFromGRPC(p))
	}
	return out
}
