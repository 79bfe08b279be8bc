package swarm

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/manager/encryption"
	"github.com/moby/swarmkit/v2/node"

	"github.com/hutch-engine/hutch/swarm/executor"
)

// Leave leaves the swarm: the node stops, the containers of its tasks are
// removed, and its state is deleted. A manager leaves only with force.
func (c *Cluster) Leave(ctx context.Context, force bool) error {
	c.op.Lock()
	defer c.op.Unlock()
	n, locked := c.current()
	if n == nil && !locked {
		return errNoSwarm
	}
	if !force && n != nil && n.Manager() != nil {
		return errLeaveManager
	}
	c.stopLocked(ctx)
	c.removeTaskContainers(ctx)
	if err := os.RemoveAll(c.root); err != nil {
		return err
	}
	_ = os.RemoveAll(filepath.Join(c.stateDir, "files"))
	c.mu.Lock()
	c.locked = false
	c.mu.Unlock()
	c.leftOnce.Do(func() { close(c.left) })
	return nil
}

// removeTaskContainers removes every container a task of the swarm made,
// and the networks made for the swarm.
func (c *Cluster) removeTaskContainers(ctx context.Context) {
	defer c.removeSwarmNetworks(ctx)
	list, err := c.engine.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", executor.LabelTaskID)})
	if err != nil {
		c.log.Warn("list task containers", "err", err)
		return
	}
	for _, ct := range list.Items {
		if _, err := c.engine.ContainerRemove(ctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !errdefs.IsNotFound(err) {
			c.log.Warn("remove task container", "id", ct.ID, "err", err)
		}
	}
}

func (c *Cluster) removeSwarmNetworks(ctx context.Context) {
	list, err := c.engine.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", executor.SwarmScopeLabel)})
	if err != nil {
		c.log.Warn("list swarm networks", "err", err)
		return
	}
	for _, n := range list.Items {
		if _, err := c.engine.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !errdefs.IsNotFound(err) {
			c.log.Warn("remove swarm network", "name", n.Name, "err", err)
		}
	}
}

// Unlock starts a locked node with its unlock key.
func (c *Cluster) Unlock(ctx context.Context, key string) error {
	c.op.Lock()
	defer c.op.Unlock()
	n, locked := c.current()
	if n != nil {
		return errSwarmNotLocked
	}
	if !locked {
		return errNoSwarm
	}
	k, err := encryption.ParseHumanReadableKey(key)
	if err != nil {
		return errInvalidUnlock
	}
	c.mu.RLock()
	st := c.state
	c.mu.RUnlock()
	err = c.startNode(ctx, node.Config{ListenRemoteAPI: st.ListenAddr, AdvertiseRemoteAPI: st.AdvertiseAddr, UnlockKey: k}, st, true)
	if errors.Is(err, node.ErrInvalidUnlockKey) {
		return errInvalidUnlock
	}
	if err == nil {
		c.mu.Lock()
		c.locked = false
		c.mu.Unlock()
	}
	return err
}
