package convert

import (
	"net/netip"
	"strings"

	gogotypes "github.com/gogo/protobuf/types"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"
)

func parseAddrs(ss []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// SwarmFromGRPC is the cluster as GET /swarm shows it.
func SwarmFromGRPC(c *api.Cluster) swarm.Swarm {
	out := swarm.Swarm{
		ClusterInfo: swarm.ClusterInfo{
			ID:           c.ID,
			Meta:         metaFromGRPC(c.Meta),
			Spec:         SwarmSpecFromGRPC(c.Spec),
			TLSInfo:      swarm.TLSInfo{TrustRoot: string(c.RootCA.CACert)},
			SubnetSize:   c.SubnetSize,
			DataPathPort: c.VXLANUDPPort,
		},
		JoinTokens: swarm.JoinTokens{Worker: c.RootCA.JoinTokens.Worker, Manager: c.RootCA.JoinTokens.Manager},
	}
	out.RootRotationInProgress = c.RootCA.RootRotation != nil
	for _, p := range c.DefaultAddressPool {
		if pf, err := netip.ParsePrefix(p); err == nil {
			out.DefaultAddrPool = append(out.DefaultAddrPool, pf)
		}
	}
	return out
}

// SwarmSpecFromGRPC is the cluster's spec as Docker shows it.
func SwarmSpecFromGRPC(s api.ClusterSpec) swarm.Spec {
	out := swarm.Spec{Annotations: annotationsFromGRPC(s.Annotations)}
	h := s.Orchestration.TaskHistoryRetentionLimit
	out.Orchestration.TaskHistoryRetentionLimit = &h
	ko := s.Raft.KeepOldSnapshots
	out.Raft = swarm.RaftConfig{
		SnapshotInterval:           s.Raft.SnapshotInterval,
		KeepOldSnapshots:           &ko,
		LogEntriesForSlowFollowers: s.Raft.LogEntriesForSlowFollowers,
		ElectionTick:               int(s.Raft.ElectionTick),
		HeartbeatTick:              int(s.Raft.HeartbeatTick),
	}
	out.Dispatcher.HeartbeatPeriod = fromDuration(s.Dispatcher.HeartbeatPeriod)
	out.CAConfig.NodeCertExpiry = fromDuration(s.CAConfig.NodeCertExpiry)
	out.CAConfig.ForceRotate = s.CAConfig.ForceRotate
	if s.TaskDefaults.LogDriver != nil {
		out.TaskDefaults.LogDriver = &swarm.Driver{Name: s.TaskDefaults.LogDriver.Name, Options: s.TaskDefaults.LogDriver.Options}
	}
	out.EncryptionConfig.AutoLockManagers = s.EncryptionConfig.AutoLockManagers
	return out
}

// MergeSwarmSpec applies what a client's spec sets onto the stored one,
// as Docker does for swarm init and update: zero values keep the stored
// setting.
func MergeSwarmSpec(dst *api.ClusterSpec, s swarm.Spec) error {
	if s.Name != "" {
		dst.Annotations.Name = s.Name
	}
	if s.Labels != nil {
		dst.Annotations.Labels = s.Labels
	}
	if s.Orchestration.TaskHistoryRetentionLimit != nil {
		dst.Orchestration.TaskHistoryRetentionLimit = *s.Orchestration.TaskHistoryRetentionLimit
	}
	if s.Raft.SnapshotInterval != 0 {
		dst.Raft.SnapshotInterval = s.Raft.SnapshotInterval
	}
	if s.Raft.KeepOldSnapshots != nil {
		dst.Raft.KeepOldSnapshots = *s.Raft.KeepOldSnapshots
	}
	if s.Raft.LogEntriesForSlowFollowers != 0 {
		dst.Raft.LogEntriesForSlowFollowers = s.Raft.LogEntriesForSlowFollowers
	}
	if s.Raft.ElectionTick != 0 {
		dst.Raft.ElectionTick = uint32(s.Raft.ElectionTick)
	}
	if s.Raft.HeartbeatTick != 0 {
		dst.Raft.HeartbeatTick = uint32(s.Raft.HeartbeatTick)
	}
	if s.Dispatcher.HeartbeatPeriod != 0 {
		dst.Dispatcher.HeartbeatPeriod = gogotypes.DurationProto(s.Dispatcher.HeartbeatPeriod)
	}
	if s.CAConfig.NodeCertExpiry != 0 {
		dst.CAConfig.NodeCertExpiry = gogotypes.DurationProto(s.CAConfig.NodeCertExpiry)
	}
	if len(s.CAConfig.ExternalCAs) > 0 || s.CAConfig.SigningCACert != "" || s.CAConfig.SigningCAKey != "" {
		return invalid("hutch's swarm mode does not take external or custom root CAs")
	}
	dst.CAConfig.ForceRotate = s.CAConfig.ForceRotate
	if s.TaskDefaults.LogDriver != nil {
		dst.TaskDefaults.LogDriver = &api.Driver{Name: s.TaskDefaults.LogDriver.Name, Options: s.TaskDefaults.LogDriver.Options}
	}
	dst.EncryptionConfig.AutoLockManagers = s.EncryptionConfig.AutoLockManagers
	return nil
}

// NodeFromGRPC is the node as Docker shows it.
func NodeFromGRPC(n *api.Node) swarm.Node {
	out := swarm.Node{ID: n.ID, Meta: metaFromGRPC(n.Meta)}
	out.Spec.Annotations = annotationsFromGRPC(n.Spec.Annotations)
	out.Spec.Role = roleFromGRPC(n.Spec.DesiredRole)
	switch n.Spec.Availability {
	case api.NodeAvailabilityPause:
		out.Spec.Availability = swarm.NodeAvailabilityPause
	case api.NodeAvailabilityDrain:
		out.Spec.Availability = swarm.NodeAvailabilityDrain
	default:
		out.Spec.Availability = swarm.NodeAvailabilityActive
	}
	if d := n.Description; d != nil {
		out.Description.Hostname = d.Hostname
		if d.Platform != nil {
			out.Description.Platform = swarm.Platform{Architecture: d.Platform.Architecture, OS: d.Platform.OS}
		}
		if d.Resources != nil {
			out.Description.Resources = swarm.Resources{NanoCPUs: d.Resources.NanoCPUs, MemoryBytes: d.Resources.MemoryBytes}
		}
		if e := d.Engine; e != nil {
			out.Description.Engine = swarm.EngineDescription{EngineVersion: e.EngineVersion, Labels: e.Labels}
			for _, p := range e.Plugins {
				out.Description.Engine.Plugins = append(out.Description.Engine.Plugins, swarm.PluginDescription{Type: p.Type, Name: p.Name})
			}
		}
		if t := d.TLSInfo; t != nil {
			out.Description.TLSInfo = swarm.TLSInfo{TrustRoot: string(t.TrustRoot), CertIssuerSubject: t.CertIssuerSubject, CertIssuerPublicKey: t.CertIssuerPublicKey}
		}
	}
	out.Status = swarm.NodeStatus{Message: n.Status.Message, Addr: n.Status.Addr}
	switch n.Status.State {
	case api.NodeStatus_DOWN:
		out.Status.State = swarm.NodeStateDown
	case api.NodeStatus_READY:
		out.Status.State = swarm.NodeStateReady
	case api.NodeStatus_DISCONNECTED:
		out.Status.State = swarm.NodeStateDisconnected
	default:
		out.Status.State = swarm.NodeStateUnknown
	}
	if m := n.ManagerStatus; m != nil {
		out.ManagerStatus = &swarm.ManagerStatus{Leader: m.Leader, Addr: m.Addr, Reachability: swarm.ReachabilityUnknown}
		switch m.Reachability {
		case api.RaftMemberStatus_REACHABLE:
			out.ManagerStatus.Reachability = swarm.ReachabilityReachable
		case api.RaftMemberStatus_UNREACHABLE:
			out.ManagerStatus.Reachability = swarm.ReachabilityUnreachable
		}
	}
	return out
}

func roleFromGRPC(r api.NodeRole) swarm.NodeRole {
	if r == api.NodeRoleManager {
		return swarm.NodeRoleManager
	}
	return swarm.NodeRoleWorker
}

// NodeSpecToGRPC is a node update's spec.
func NodeSpecToGRPC(s swarm.NodeSpec) (api.NodeSpec, error) {
	out := api.NodeSpec{Annotations: annotationsToGRPC(s.Annotations)}
	switch s.Role {
	case swarm.NodeRoleManager:
		out.DesiredRole = api.NodeRoleManager
	case swarm.NodeRoleWorker:
		out.DesiredRole = api.NodeRoleWorker
	default:
		return api.NodeSpec{}, invalid("invalid Role: %q", s.Role)
	}
	a, err := AvailabilityToGRPC(s.Availability)
	if err != nil {
		return api.NodeSpec{}, err
	}
	out.Availability = a
	return out, nil
}

// AvailabilityToGRPC maps a node's availability; empty is active.
func AvailabilityToGRPC(a swarm.NodeAvailability) (api.NodeSpec_Availability, error) {
	switch swarm.NodeAvailability(strings.ToLower(string(a))) {
	case swarm.NodeAvailabilityActive, "":
		return api.NodeAvailabilityActive, nil
	case swarm.NodeAvailabilityPause:
		return api.NodeAvailabilityPause, nil
	case swarm.NodeAvailabilityDrain:
		return api.NodeAvailabilityDrain, nil
	}
	return 0, invalid("invalid Availability: %q", a)
}

// TaskFromGRPC is the task as Docker shows it.
func TaskFromGRPC(t *api.Task) swarm.Task {
	out := swarm.Task{
		ID:           t.ID,
		Meta:         metaFromGRPC(t.Meta),
		Annotations:  annotationsFromGRPC(t.Annotations),
		Spec:         TaskSpecFromGRPC(t.Spec),
		ServiceID:    t.ServiceID,
		Slot:         int(t.Slot),
		NodeID:       t.NodeID,
		DesiredState: TaskStateFromGRPC(t.DesiredState),
	}
	out.Status = swarm.TaskStatus{
		Timestamp: fromTimestamp(t.Status.Timestamp),
		State:     TaskStateFromGRPC(t.Status.State),
		Message:   t.Status.Message,
		Err:       t.Status.Err,
	}
	if cs := t.Status.GetContainer(); cs != nil {
		out.Status.ContainerStatus = &swarm.ContainerStatus{ContainerID: cs.ContainerID, PID: int(cs.PID), ExitCode: int(cs.ExitCode)}
	}
	if ps := t.Status.PortStatus; ps != nil {
		for _, p := range ps.Ports {
			out.Status.PortStatus.Ports = append(out.Status.PortStatus.Ports, portFromGRPC(p))
		}
	}
	if t.JobIteration != nil {
		out.JobIteration = &swarm.Version{Index: t.JobIteration.Index}
	}
	return out
}

// TaskStateFromGRPC is SwarmKit's task state by Docker's name.
func TaskStateFromGRPC(s api.TaskState) swarm.TaskState {
	return swarm.TaskState(strings.ToLower(s.String()))
}

// TaskStateToGRPC is the task state Docker's name denotes.
func TaskStateToGRPC(s string) (api.TaskState, bool) {
	v, ok := api.TaskState_value[strings.ToUpper(s)]
	return api.TaskState(v), ok
}

// SecretFromGRPC is the secret as Docker shows it, without its data.
func SecretFromGRPC(s *api.Secret) swarm.Secret {
	out := swarm.Secret{ID: s.ID, Meta: metaFromGRPC(s.Meta)}
	out.Spec.Annotations = annotationsFromGRPC(s.Spec.Annotations)
	if d := s.Spec.Driver; d != nil {
		out.Spec.Driver = &swarm.Driver{Name: d.Name, Options: d.Options}
	}
	if d := s.Spec.Templating; d != nil {
		out.Spec.Templating = &swarm.Driver{Name: d.Name, Options: d.Options}
	}
	return out
}

// SecretSpecToGRPC is a secret create request's spec.
func SecretSpecToGRPC(s swarm.SecretSpec) (api.SecretSpec, error) {
	if s.Driver != nil && s.Driver.Name != "" {
		return api.SecretSpec{}, invalid("hutch's swarm mode has no secret drivers: give the secret's data")
	}
	out := api.SecretSpec{Annotations: annotationsToGRPC(s.Annotations), Data: s.Data}
	if t := s.Templating; t != nil && t.Name != "" {
		out.Templating = &api.Driver{Name: t.Name, Options: t.Options}
	}
	return out, nil
}

// ConfigFromGRPC is the config as Docker shows it, with its data.
func ConfigFromGRPC(c *api.Config) swarm.Config {
	out := swarm.Config{ID: c.ID, Meta: metaFromGRPC(c.Meta)}
	out.Spec.Annotations = annotationsFromGRPC(c.Spec.Annotations)
	out.Spec.Data = c.Spec.Data
	if d := c.Spec.Templating; d != nil {
		out.Spec.Templating = &swarm.Driver{Name: d.Name, Options: d.Options}
	}
	return out
}

// ConfigSpecToGRPC is a config create request's spec.
func ConfigSpecToGRPC(s swarm.ConfigSpec) api.ConfigSpec {
	out := api.ConfigSpec{Annotations: annotationsToGRPC(s.Annotations), Data: s.Data}
	if t := s.Templating; t != nil && t.Name != "" {
		out.Templating = &api.Driver{Name: t.Name, Options: t.Options}
	}
	return out
}
