package buildkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/continuity/fs"
	"github.com/moby/buildkit/executor"
	"github.com/moby/buildkit/executor/oci"
	resourcestypes "github.com/moby/buildkit/executor/resources/types"
	gatewayapi "github.com/moby/buildkit/frontend/gateway/pb"
	"github.com/moby/buildkit/identity"
	"github.com/moby/buildkit/solver/pb"
	"github.com/moby/buildkit/util/network"
	"github.com/moby/buildkit/util/stack"
	"github.com/moby/sys/user"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// runExecutor runs BuildKit's containers (RUN steps, and the containers
// of gateway frontends) through hutch-runtime: a runtime server of this
// process creates each one with libcontainer from an OCI bundle, as it
// creates the engine's containers for their shims, and its status comes
// back on the request's connection. The containers share the process's
// user namespace (uid 0 there), as the engine's do.
type runExecutor struct {
	root     string // bundles, resolv.conf, hosts
	stateDir string // libcontainer's state root
	runtime  *shim.RuntimeServer
	bin      string
	dns      *oci.DNSConfig
	networks map[pb.NetMode]network.Provider

	log *slog.Logger

	mu      sync.Mutex
	running map[string]*buildCtr
}

// buildCtr is a container of Run, for Exec.
type buildCtr struct {
	bundle string
	rootfs string
	spec   *specs.Spec
	// started is closed once the init runs; done once Run has returned.
	started, done chan struct{}
}

func newExecutor(cfg Config, root string) (*runExecutor, error) {
	stateDir := filepath.Join(cfg.StateDir, "runc")
	for _, d := range []string{root, stateDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	cleanStale(root, stateDir, cfg.Log)
	var dns *oci.DNSConfig
	if len(cfg.DNS) > 0 {
		dns = &oci.DNSConfig{Nameservers: cfg.DNS}
	}
	return &runExecutor{
		root:     root,
		stateDir: stateDir,
		runtime:  shim.NewRuntimeServer(cfg.RuntimeBinary, filepath.Join(cfg.StateDir, "runtime.sock"), filepath.Join(cfg.StateDir, "runtime.log"), cfg.Debug, cfg.Log),
		bin:      cfg.RuntimeBinary,
		dns:      dns,
		networks: map[pb.NetMode]network.Provider{
			pb.NetMode_UNSET: network.NewHostProvider(),
			pb.NetMode_HOST:  network.NewHostProvider(),
			pb.NetMode_NONE:  network.NewNoneProvider(),
		},
		running: map[string]*buildCtr{},
		log:     cfg.Log,
	}, nil
}

// Close has the runtime server exit once its processes have.
func (e *runExecutor) Close() { e.runtime.Close() }

// Run runs process in a new container on rootfs with mounts.
func (e *runExecutor) Run(ctx context.Context, id string, root executor.Mount, mounts []executor.Mount, process executor.ProcessInfo, started chan<- struct{}) (_ resourcestypes.Recorder, err error) {
	if id == "" {
		id = identity.NewID()
	}
	if err := executor.ValidContainerID(id); err != nil {
		return nil, err
	}
	var startOnce sync.Once
	signalStarted := func() {
		startOnce.Do(func() {
			if started != nil {
				close(started)
			}
		})
	}
	defer signalStarted()
	meta := process.Meta
	if meta.Tty {
		return nil, errors.New("a terminal in a build container is not supported by hutch")
	}
	if meta.Proxy != nil {
		return nil, errors.New("the build network proxy is not supported by hutch")
	}
	provider, ok := e.networks[meta.NetMode]
	if !ok {
		return nil, fmt.Errorf("unknown network mode %s", meta.NetMode)
	}
	netns, err := provider.New(ctx, meta.Hostname, network.NamespaceOptions{})
	if err != nil {
		return nil, err
	}
	defer netns.Close()

	bundle := filepath.Join(e.root, id)
	if err := os.Mkdir(bundle, 0o711); err != nil {
		return nil, err
	}
	defer removeBundle(bundle, e.log)
	spec, rootfs, cleanup, err := e.prepare(ctx, id, bundle, root, mounts, meta, netns)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return nil, err
	}
	ctr := &buildCtr{bundle: bundle, rootfs: rootfs, spec: spec, started: make(chan struct{}), done: make(chan struct{})}
	e.mu.Lock()
	e.running[id] = ctr
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, id)
		e.mu.Unlock()
		close(ctr.done)
	}()
	status, err := e.runProcess(ctx, &wire.RuntimeRequest{Op: wire.RuntimeCreate, Bundle: bundle}, process, func() {
		close(ctr.started)
		signalStarted()
	})
	return nil, exitError(ctx, status, err, meta.ValidExitCodes)
}

// prepare mounts the rootfs under bundle and writes the bundle's spec and
// shim.json; cleanup (also after an error) unmounts.
func (e *runExecutor) prepare(ctx context.Context, id, bundle string, root executor.Mount, mounts []executor.Mount, meta executor.Meta, netns network.Namespace) (*specs.Spec, string, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	fail := func(err error) (*specs.Spec, string, func(), error) { return nil, "", cleanup, err }

	stateRoot, err := os.OpenRoot(e.root)
	if err != nil {
		return fail(err)
	}
	defer stateRoot.Close()
	resolvConf, err := oci.GetResolvConf(ctx, stateRoot, nil, e.dns, meta.NetMode)
	if err != nil {
		return fail(err)
	}
	hosts, cleanHosts, err := oci.GetHostsFile(ctx, stateRoot, meta.ExtraHosts, nil, meta.Hostname)
	if err != nil {
		return fail(err)
	}
	if cleanHosts != nil {
		cleanups = append(cleanups, cleanHosts)
	}

	mountable, err := root.Src.Mount(ctx, false)
	if err != nil {
		return fail(err)
	}
	rootMounts, release, err := mountable.Mount()
	if err != nil {
		return fail(err)
	}
	if release != nil {
		cleanups = append(cleanups, func() { _ = release() })
	}
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.Mkdir(rootfs, 0o700); err != nil {
		return fail(err)
	}
	if err := mount.All(rootMounts, rootfs); err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, func() { _ = mount.Unmount(rootfs, 0) })
	cleanups = append(cleanups, executor.MountStubsCleaner(context.WithoutCancel(ctx), rootfs, mounts, meta.RemoveMountStubsRecursive))

	uid, gid, sgids, err := oci.GetUser(rootfs, meta.User)
	if err != nil {
		return fail(err)
	}
	spec, cleanSpec, err := oci.GenerateSpec(ctx, meta, mounts, id,
		filepath.Join(e.root, resolvConf), filepath.Join(e.root, hosts), netns,
		"", oci.ProcessSandbox, nil, "", false, "", nil, oci.WithUIDGID(uid, gid, sgids))
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, cleanSpec)
	spec.Root.Path = rootfs
	spec.Root.Readonly = root.Readonly || meta.ReadonlyRootFS
	// No cgroup of the build's own: rootless on cgroup v1 there is none to
	// have, and the runtime asks for none where none is named.
	spec.Linux.CgroupsPath = ""
	// The spec keeps BuildKit's seccomp filter (Docker's default profile
	// for the step's capabilities; --allow security.insecure, which has
	// none, is not granted), which hutch-runtime installs as for the
	// engine's containers.

	cwd, err := fs.RootPath(rootfs, meta.Cwd)
	if err != nil {
		return fail(fmt.Errorf("working dir %s points to invalid target: %w", meta.Cwd, err))
	}
	if _, err := os.Stat(cwd); err != nil {
		if err := user.MkdirAllAndChown(cwd, 0o755, int(uid), int(gid)); err != nil {
			return fail(fmt.Errorf("failed to create working directory %s: %w", meta.Cwd, err))
		}
	}
	if err := e.writeBundle(id, bundle, spec); err != nil {
		return fail(err)
	}
	return spec, rootfs, cleanup, nil
}

// writeBundle writes the spec and the shim.json hutch-runtime reads.
func (e *runExecutor) writeBundle(id, bundle string, spec *specs.Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bundle, wire.SpecFile), b, 0o600); err != nil {
		return err
	}
	cfg := &wire.Config{ID: id, StateDir: e.stateDir, RuntimeBinary: e.bin}
	cb, err := cfg.MarshalJSON()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(bundle, wire.ConfigFile), cb, 0o600, false)
}

// Exec runs process in the running container id.
func (e *runExecutor) Exec(ctx context.Context, id string, process executor.ProcessInfo) error {
	e.mu.Lock()
	ctr, ok := e.running[id]
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("container %s not found", id)
	}
	select {
	case <-ctr.started:
	case <-ctr.done:
		return fmt.Errorf("container %s has stopped", id)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	meta := process.Meta
	if meta.Tty {
		return errors.New("a terminal in a build container is not supported by hutch")
	}
	p := *ctr.spec.Process
	p.Terminal = false
	p.Args = meta.Args
	if meta.Cwd != "" {
		p.Cwd = meta.Cwd
	}
	if len(meta.Env) > 0 {
		p.Env = meta.Env
	}
	if meta.User != "" {
		uid, gid, sgids, err := oci.GetUser(ctr.rootfs, meta.User)
		if err != nil {
			return err
		}
		p.User = specs.User{UID: uid, GID: gid, AdditionalGids: sgids}
	}
	pj, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	status, err := e.runProcess(ctx, &wire.RuntimeRequest{Op: wire.RuntimeExec, Bundle: ctr.bundle, Process: pj}, process, nil)
	return exitError(ctx, status, err, meta.ValidExitCodes)
}

// exitError is BuildKit's error for a process's end: nil for an exit
// code it accepts, else an ExitError with the code (or unknown when the
// process never ran).
func exitError(ctx context.Context, status int, err error, valid []int) error {
	exitErr := &gatewayapi.ExitError{ExitCode: uint32(status), Err: err}
	if err != nil {
		exitErr.ExitCode = gatewayapi.UnknownExitStatus
		return stack.Enable(exitErr)
	}
	if valid == nil && status == 0 {
		return nil
	}
	for _, c := range valid {
		if c == status {
			return nil
		}
	}
	if ctx.Err() != nil {
		exitErr.Err = fmt.Errorf("%s: %w", exitErr.Error(), context.Cause(ctx))
		return exitErr
	}
	return stack.Enable(exitErr)
}
