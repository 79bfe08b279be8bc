package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/api"
	"github.com/moby/swarmkit/v2/node"
	"google.golang.org/grpc"

	"github.com/hutch-engine/hutch/swarm/convert"
	"github.com/hutch-engine/hutch/swarm/executor"
)

// Docker's words for a node's swarm state (moby's daemon/cluster).
var (
	errNoSwarm         = errdefs.ErrUnavailable.WithMessage("This node is not part of a swarm")
	errSwarmExists     = errdefs.ErrUnavailable.WithMessage(`This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.`)
	errNoManager       = errdefs.ErrUnavailable.WithMessage(`This node is not a swarm manager. Worker nodes can't be used to view or modify cluster state. Please run this command on a manager node or promote the current node to a manager.`)
	errNotManagerYet   = errdefs.ErrUnavailable.WithMessage(`This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.`)
	errSwarmLocked     = errdefs.ErrUnavailable.WithMessage(`Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.`)
	errSwarmNotLocked  = errdefs.ErrConflict.WithMessage("swarm is not locked")
	errLeaveManager    = errdefs.ErrUnavailable.WithMessage("You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message.")
	errInvalidUnlock   = errdefs.ErrInvalidArgument.WithMessage("invalid key")
	errJoinMissingAddr = errdefs.ErrInvalidArgument.WithMessage("at least 1 RemoteAddr is required to join")
)

// connectTimeout bounds the wait for a new node to be ready (Docker's
// swarmConnectTimeout).
const connectTimeout = 20 * time.Second

// defaultPort is the swarm's port when an address names none.
const defaultPort = "2377"

// stateFile keeps, beside SwarmKit's own state, the addresses the node
// was started with, so that a restarted engine starts it again.
const stateFile = "hutch-swarm.json"

type nodeState struct {
	ListenAddr    string
	AdvertiseAddr string
}

// Cluster owns the SwarmKit node of this engine, if any.
type Cluster struct {
	root, stateDir string
	engine         *client.Client
	exec           *executor.Executor
	log            *slog.Logger
	// left is closed once the node has left its swarm: the process exits.
	left     chan struct{}
	leftOnce sync.Once

	// op serializes init, join, leave and unlock; mu guards the fields
	// below and is held only briefly (the node's start calls the engine,
	// whose /info asks Info).
	op      sync.Mutex
	mu      sync.RWMutex
	node    *node.Node
	cancel  context.CancelFunc
	state   nodeState
	conn    *grpc.ClientConn
	control api.ControlClient
	logs    api.LogsClient
	ca      api.CAClient
	locked  bool
	lastErr error
}

func newCluster(cfg Config, c *client.Client) *Cluster {
	return &Cluster{
		root:     cfg.Root,
		stateDir: cfg.StateDir,
		engine:   c,
		exec:     executor.New(c, filepath.Join(cfg.StateDir, "files")),
		log:      cfg.Log,
		left:     make(chan struct{}),
	}
}

// resume starts the node again from the state under root, if there is any.
func (c *Cluster) resume(ctx context.Context) error {
	b, err := os.ReadFile(filepath.Join(c.root, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st nodeState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", stateFile, err)
	}
	c.op.Lock()
	defer c.op.Unlock()
	// The node comes up in the background (a Raft election first): /info
	// says pending until it is ready.
	err = c.startNode(ctx, node.Config{ListenRemoteAPI: st.ListenAddr, AdvertiseRemoteAPI: st.AdvertiseAddr}, st, false)
	if errors.Is(err, node.ErrInvalidUnlockKey) {
		c.mu.Lock()
		c.locked, c.state = true, st
		c.mu.Unlock()
		return nil
	}
	return err
}

// startNode starts a SwarmKit node with cfg and, with wait, waits for it
// to be ready. c.op is held.
func (c *Cluster) startNode(ctx context.Context, cfg node.Config, st nodeState, wait bool) error {
	if err := os.MkdirAll(c.root, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(c.stateDir, 0o700); err != nil {
		return err
	}
	hostname, _ := os.Hostname()
	cfg.Hostname = hostname
	cfg.StateDir = c.root
	cfg.ListenControlAPI = filepath.Join(c.stateDir, "control.sock")
	cfg.Executor = c.exec
	cfg.NetworkProvider = noOverlay{}
	cfg.ElectionTick = 10
	cfg.HeartbeatTick = 1
	_ = os.Remove(cfg.ListenControlAPI)
	n, err := node.New(&cfg)
	if err != nil {
		return err
	}
	nctx, cancel := context.WithCancel(context.Background())
	if err := n.Start(nctx); err != nil {
		cancel()
		return err
	}
	c.mu.Lock()
	c.node, c.cancel, c.state, c.lastErr = n, cancel, st, nil
	c.mu.Unlock()
	go c.watchControl(nctx, n)
	errc := make(chan error, 1)
	go func() { errc <- n.Err(nctx) }()
	if !wait {
		go c.watchErr(nctx, errc)
		return nil
	}
	timer := time.NewTimer(connectTimeout)
	defer timer.Stop()
	select {
	case <-n.Ready():
	case err := <-errc:
		c.stopLocked(context.Background())
		if err == nil {
			err = errors.New("the swarm node stopped")
		}
		return err
	case <-timer.C:
		// Docker answers the same way: the node goes on trying.
		return errdefs.ErrUnavailable.WithMessage("Timeout was reached before node joined. The attempt to join the swarm will continue in the background. Use the \"docker info\" command to see the current swarm status of your node.")
	case <-ctx.Done():
		return ctx.Err()
	}
	go c.watchErr(nctx, errc)
	return c.saveState(st)
}

// watchErr records the error a running node stops with, for /info.
// An autolocked node that starts without its key stops with
// ErrInvalidUnlockKey: the swarm is locked until `docker swarm unlock`.
func (c *Cluster) watchErr(ctx context.Context, errc <-chan error) {
	err := <-errc
	if err == nil || ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(err, node.ErrInvalidUnlockKey) {
		c.log.Info("the swarm is locked: docker swarm unlock takes its key")
		if c.cancel != nil {
			c.cancel()
		}
		c.node, c.conn, c.control, c.logs, c.ca = nil, nil, nil, nil, nil
		c.locked = true
		return
	}
	c.log.Error("swarm node stopped", "err", err)
	c.lastErr = err
}

func (c *Cluster) saveState(st nodeState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	p := filepath.Join(c.root, stateFile)
	if err := os.WriteFile(p+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// watchControl follows the node's control socket connection: there is one
// while the node is a manager.
func (c *Cluster) watchControl(ctx context.Context, n *node.Node) {
	for conn := range n.ListenControlSocket(ctx) {
		c.mu.Lock()
		if c.node == n {
			c.conn = conn
			if conn != nil {
				c.control, c.logs, c.ca = api.NewControlClient(conn), api.NewLogsClient(conn), api.NewCAClient(conn)
			} else {
				c.control, c.logs, c.ca = nil, nil, nil
			}
		}
		c.mu.Unlock()
	}
}

// stopLocked stops the node; c.op is held.
func (c *Cluster) stopLocked(ctx context.Context) {
	c.mu.Lock()
	n, cancel := c.node, c.cancel
	c.node, c.conn, c.control, c.logs, c.ca = nil, nil, nil, nil, nil
	c.mu.Unlock()
	if n == nil {
		return
	}
	sctx, done := context.WithTimeout(ctx, 15*time.Second)
	defer done()
	_ = n.Stop(sctx)
	cancel()
}

// Stop stops the node and keeps its state, as at the engine's shutdown.
func (c *Cluster) Stop(ctx context.Context) {
	c.op.Lock()
	defer c.op.Unlock()
	c.stopLocked(ctx)
}

// current is the node and whether it is locked.
func (c *Cluster) current() (*node.Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.node, c.locked
}

// listenAddrs resolves a request's listen and advertise addresses: the
// port defaults to 2377, and with no address to advertise, a node that
// listens on all addresses advertises 127.0.0.1 (the engine has no
// better one: it shares the host's network namespace, and other nodes
// on this host reach it there).
func listenAddrs(listen, advertise string) (string, string, error) {
	if listen == "" {
		listen = "0.0.0.0:" + defaultPort
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		if host, port = listen, defaultPort; net.ParseIP(host) == nil {
			return "", "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid listen address %q", listen))
		}
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid listen address %q: bad port", listen))
	}
	if ip := net.ParseIP(host); ip == nil && host != "" {
		return "", "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid listen address %q: hutch takes an IP address, not an interface or name", listen))
	}
	listen = net.JoinHostPort(host, port)
	if advertise == "" {
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			advertise = net.JoinHostPort("127.0.0.1", port)
		} else {
			advertise = listen
		}
	} else if _, _, err := net.SplitHostPort(advertise); err != nil {
		if net.ParseIP(advertise) == nil {
			return "", "", errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid advertise address %q: hutch takes an IP address, not an interface or name", advertise))
		}
		advertise = net.JoinHostPort(advertise, port)
	}
	return listen, advertise, nil
}

// Init creates a swarm of this one node, a manager.
func (c *Cluster) Init(ctx context.Context, req swarm.InitRequest) (string, error) {
	c.op.Lock()
	defer c.op.Unlock()
	if n, locked := c.current(); n != nil || locked {
		if !req.ForceNewCluster {
			return "", errSwarmExists
		}
		c.stopLocked(ctx)
	}
	listen, advertise, err := listenAddrs(req.ListenAddr, req.AdvertiseAddr)
	if err != nil {
		return "", err
	}
	avail, err := convert.AvailabilityToGRPC(req.Availability)
	if err != nil {
		return "", err
	}
	// Checked before anything starts: a bad spec creates nothing.
	var probe api.ClusterSpec
	if err := convert.MergeSwarmSpec(&probe, req.Spec); err != nil {
		return "", err
	}
	if err := checkListen(listen); err != nil {
		return "", err
	}
	cfg := node.Config{
		ListenRemoteAPI:    listen,
		AdvertiseRemoteAPI: advertise,
		ForceNewCluster:    req.ForceNewCluster,
		AutoLockManagers:   req.AutoLockManagers,
		Availability:       avail,
	}
	if err := c.startNode(ctx, cfg, nodeState{ListenAddr: listen, AdvertiseAddr: advertise}, true); err != nil {
		c.stopLocked(ctx)
		_ = os.RemoveAll(c.root)
		return "", err
	}
	if err := c.initSpec(ctx, req.Spec); err != nil {
		return "", err
	}
	return c.nodeID(), nil
}

// checkListen fails at once for an address that cannot be listened on
// (in use, not on this host), as Docker's init does, rather than leaving
// a node that never comes up.
func checkListen(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("listen on %s: %v", addr, err))
	}
	return l.Close()
}

// initSpec applies the init request's spec to the new cluster. c.op is
// held.
func (c *Cluster) initSpec(ctx context.Context, spec swarm.Spec) error {
	ctl, err := c.waitControl(ctx)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		cl, err := getCluster(ctx, ctl)
		if err == nil {
			s := cl.Spec
			if err := convert.MergeSwarmSpec(&s, spec); err != nil {
				return err
			}
			_, err = ctl.UpdateCluster(ctx, &api.UpdateClusterRequest{ClusterID: cl.ID, ClusterVersion: &cl.Meta.Version, Spec: &s})
			if err == nil {
				return nil
			}
		}
		if i > 50 {
			return fmt.Errorf("set the swarm's spec: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitControl waits for the manager's control connection (right after
// the node became ready it may not be there yet).
func (c *Cluster) waitControl(ctx context.Context) (api.ControlClient, error) {
	for i := 0; i < 100; i++ {
		c.mu.RLock()
		ctl := c.control
		c.mu.RUnlock()
		if ctl != nil {
			return ctl, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, errNoManager
}

func getCluster(ctx context.Context, ctl api.ControlClient) (*api.Cluster, error) {
	r, err := ctl.ListClusters(ctx, &api.ListClustersRequest{})
	if err != nil {
		return nil, err
	}
	for _, cl := range r.Clusters {
		if cl.Spec.Annotations.Name == "default" || len(r.Clusters) == 1 {
			return cl, nil
		}
	}
	return nil, errdefs.ErrNotFound.WithMessage("no cluster found")
}

// Join joins the swarm a manager at req.RemoteAddrs[0] runs.
func (c *Cluster) Join(ctx context.Context, req swarm.JoinRequest) error {
	c.op.Lock()
	defer c.op.Unlock()
	if n, locked := c.current(); n != nil || locked {
		return errSwarmExists
	}
	if len(req.RemoteAddrs) == 0 {
		return errJoinMissingAddr
	}
	listen, advertise, err := listenAddrs(req.ListenAddr, req.AdvertiseAddr)
	if err != nil {
		return err
	}
	avail, err := convert.AvailabilityToGRPC(req.Availability)
	if err != nil {
		return err
	}
	if err := checkListen(listen); err != nil {
		return err
	}
	cfg := node.Config{
		ListenRemoteAPI:    listen,
		AdvertiseRemoteAPI: advertise,
		JoinAddr:           req.RemoteAddrs[0],
		JoinToken:          req.JoinToken,
		Availability:       avail,
	}
	if err := c.startNode(ctx, cfg, nodeState{ListenAddr: listen, AdvertiseAddr: advertise}, true); err != nil {
		if !errdefs.IsUnavailable(err) {
			c.stopLocked(ctx)
			_ = os.RemoveAll(c.root)
		}
		return err
	}
	return nil
}

// manager returns the control API, or Docker's error for a node that is
// not a manager.
func (c *Cluster) manager() (api.ControlClient, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case c.locked:
		return nil, errSwarmLocked
	case c.node == nil:
		return nil, errNotManagerYet
	case c.control == nil:
		return nil, errNoManager
	}
	return c.control, nil
}

func (c *Cluster) caClient() (api.CAClient, error) {
	if _, err := c.manager(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ca, nil
}

func (c *Cluster) logsClient() (api.LogsClient, error) {
	if _, err := c.manager(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.logs, nil
}

// Info is /info's Swarm section.
func (c *Cluster) Info(ctx context.Context, light bool) swarm.Info {
	c.mu.RLock()
	n, locked, st, lastErr, ctl := c.node, c.locked, c.state, c.lastErr, c.control
	c.mu.RUnlock()
	info := swarm.Info{LocalNodeState: swarm.LocalNodeStateInactive}
	switch {
	case locked:
		info.LocalNodeState = swarm.LocalNodeStateLocked
		return info
	case n == nil:
		return info
	}
	info.NodeID = n.NodeID()
	if host, _, err := net.SplitHostPort(st.AdvertiseAddr); err == nil {
		info.NodeAddr = host
	}
	select {
	case <-n.Ready():
		info.LocalNodeState = swarm.LocalNodeStateActive
	default:
		info.LocalNodeState = swarm.LocalNodeStatePending
	}
	if lastErr != nil {
		info.LocalNodeState, info.Error = swarm.LocalNodeStateError, lastErr.Error()
	}
	for _, p := range n.Remotes() {
		info.RemoteManagers = append(info.RemoteManagers, swarm.Peer{NodeID: p.NodeID, Addr: p.Addr})
	}
	if ctl == nil {
		return info
	}
	info.ControlAvailable = true
	if light {
		return info
	}
	if cl, err := getCluster(ctx, ctl); err == nil {
		ci := convert.SwarmFromGRPC(cl).ClusterInfo
		info.Cluster = &ci
	}
	if r, err := ctl.ListNodes(ctx, &api.ListNodesRequest{}); err == nil {
		info.Nodes = len(r.Nodes)
		for _, nd := range r.Nodes {
			if nd.ManagerStatus != nil {
				info.Managers++
			}
		}
	}
	return info
}

// nodeID is this node's ID ("" outside a swarm).
func (c *Cluster) nodeID() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.node == nil {
		return ""
	}
	return c.node.NodeID()
}
