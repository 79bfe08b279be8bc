package swarm

import (
	"context"
	"fmt"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/swarmkit/v2/api"
	"github.com/moby/swarmkit/v2/manager/encryption"

	"github.com/hutch-engine/hutch/swarm/convert"
)

func (s *server) info(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, s.c.Info(r.Context(), boolQuery(r, "light")))
}

func (s *server) swarmInit(w http.ResponseWriter, r *http.Request) error {
	var req swarm.InitRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	id, err := s.c.Init(r.Context(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, id)
}

func (s *server) swarmJoin(w http.ResponseWriter, r *http.Request) error {
	var req swarm.JoinRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := s.c.Join(r.Context(), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) swarmLeave(w http.ResponseWriter, r *http.Request) error {
	if err := s.c.Leave(r.Context(), boolQuery(r, "force")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) swarmInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	cl, err := getCluster(r.Context(), ctl)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, convert.SwarmFromGRPC(cl))
}

func (s *server) swarmUpdate(w http.ResponseWriter, r *http.Request) error {
	v, err := version(r, "swarm")
	if err != nil {
		return err
	}
	var spec swarm.Spec
	if err := decode(r, &spec); err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	cl, err := getCluster(r.Context(), ctl)
	if err != nil {
		return err
	}
	// Docker replaces the spec with the client's, which the CLI reads
	// first and changes; zero values keep SwarmKit's.
	gs := cl.Spec
	if err := convert.MergeSwarmSpec(&gs, spec); err != nil {
		return err
	}
	_, err = ctl.UpdateCluster(r.Context(), &api.UpdateClusterRequest{
		ClusterID:      cl.ID,
		ClusterVersion: &api.Version{Index: v},
		Spec:           &gs,
		Rotation: api.KeyRotation{
			WorkerJoinToken:  boolQuery(r, "rotateWorkerToken"),
			ManagerJoinToken: boolQuery(r, "rotateManagerToken"),
			ManagerUnlockKey: boolQuery(r, "rotateManagerUnlockKey"),
		},
	})
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) swarmUnlockKey(w http.ResponseWriter, r *http.Request) error {
	ca, err := s.c.caClient()
	if err != nil {
		return err
	}
	resp, err := ca.GetUnlockKey(r.Context(), &api.GetUnlockKeyRequest{})
	if err != nil {
		return err
	}
	key := ""
	if len(resp.UnlockKey) > 0 {
		key = encryption.HumanReadableKey(resp.UnlockKey)
	}
	return writeJSON(w, http.StatusOK, swarm.UnlockKeyResponse{UnlockKey: key})
}

func (s *server) swarmUnlock(w http.ResponseWriter, r *http.Request) error {
	var req swarm.UnlockRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := s.c.Unlock(r.Context(), req.UnlockKey); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// resolveNode finds a node by ID, name or ID prefix, as Docker does;
// "self" is this node.
func (s *server) resolveNode(ctx context.Context, ctl api.ControlClient, ref string) (*api.Node, error) {
	if ref == "self" {
		ref = s.c.nodeID()
	}
	if n, err := ctl.GetNode(ctx, &api.GetNodeRequest{NodeID: ref}); err == nil {
		return n.Node, nil
	}
	r, err := ctl.ListNodes(ctx, &api.ListNodesRequest{Filters: &api.ListNodesRequest_Filters{Names: []string{ref}}})
	if err != nil {
		return nil, err
	}
	if len(r.Nodes) == 0 {
		if r, err = ctl.ListNodes(ctx, &api.ListNodesRequest{Filters: &api.ListNodesRequest_Filters{IDPrefixes: []string{ref}}}); err != nil {
			return nil, err
		}
	}
	switch len(r.Nodes) {
	case 0:
		return nil, errdefs.ErrNotFound.WithMessage(fmt.Sprintf("node %s not found", ref))
	case 1:
		return r.Nodes[0], nil
	}
	return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("node %s is ambiguous (%d matches found)", ref, len(r.Nodes)))
}

func (s *server) nodeList(w http.ResponseWriter, r *http.Request) error {
	f, err := convert.ParseFilters(r.URL.Query().Get("filters"), "id", "label", "name", "node.label", "membership", "role")
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	gf := &api.ListNodesRequest_Filters{NamePrefixes: f["name"], IDPrefixes: f["id"], Labels: f.Labels("label"), NodeLabels: f.Labels("node.label")}
	for _, v := range f["role"] {
		switch v {
		case "manager":
			gf.Roles = append(gf.Roles, api.NodeRoleManager)
		case "worker":
			gf.Roles = append(gf.Roles, api.NodeRoleWorker)
		default:
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid role filter value: %s", v))
		}
	}
	for _, v := range f["membership"] {
		switch v {
		case "accepted":
			gf.Memberships = append(gf.Memberships, api.NodeMembershipAccepted)
		case "pending":
			gf.Memberships = append(gf.Memberships, api.NodeMembershipPending)
		default:
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Invalid membership filter value: %s", v))
		}
	}
	resp, err := ctl.ListNodes(r.Context(), &api.ListNodesRequest{Filters: gf})
	if err != nil {
		return err
	}
	out := []swarm.Node{}
	for _, n := range resp.Nodes {
		out = append(out, convert.NodeFromGRPC(n))
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *server) nodeInspect(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	n, err := s.resolveNode(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, convert.NodeFromGRPC(n))
}

func (s *server) nodeRemove(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	n, err := s.resolveNode(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.RemoveNode(r.Context(), &api.RemoveNodeRequest{NodeID: n.ID, Force: boolQuery(r, "force")}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (s *server) nodeUpdate(w http.ResponseWriter, r *http.Request) error {
	v, err := version(r, "node")
	if err != nil {
		return err
	}
	var spec swarm.NodeSpec
	if err := decode(r, &spec); err != nil {
		return err
	}
	gs, err := convert.NodeSpecToGRPC(spec)
	if err != nil {
		return err
	}
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	n, err := s.resolveNode(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := ctl.UpdateNode(r.Context(), &api.UpdateNodeRequest{NodeID: n.ID, NodeVersion: &api.Version{Index: v}, Spec: &gs}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}
