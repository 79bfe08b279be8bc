// Package daemon runs `hutch daemon`: it keeps one instance per user, starts
// the namespaces (rootless/) when not root, and runs the engine behind the
// API server.
package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/apiserver"
	"github.com/hutch-engine/hutch/buildkit/proxy"
	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/engine"
	enet "github.com/hutch-engine/hutch/engine/network"
	"github.com/hutch-engine/hutch/internal/activation"
	"github.com/hutch-engine/hutch/internal/idle"
	"github.com/hutch-engine/hutch/internal/logging"
	"github.com/hutch-engine/hutch/rootless"
	rootlessnet "github.com/hutch-engine/hutch/rootless/network"
	"github.com/hutch-engine/hutch/rootless/preflight"
	"github.com/hutch-engine/hutch/storage"
	swarmproxy "github.com/hutch-engine/hutch/swarm/proxy"
	"github.com/hutch-engine/hutch/version"
)

// Run is `hutch daemon`. On the host it resolves the configuration, takes
// the per-user lock and, unless it is real root, execs hutch-ns, which runs
// this binary inside the namespaces; inside (or as real root) it serves the
// API until ctx ends.
func Run(ctx context.Context, f config.Flags) error {
	if rootless.CurrentRole() == rootless.Engine {
		c, ok, err := config.Inherited()
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("started inside a rootlesskit namespace without hutch's configuration: start `hutch daemon` on the host")
		}
		cleanup, err := kept(c)
		if err != nil {
			return err
		}
		defer cleanup()
		return runEngine(ctx, c, logging.New(c.LogLevel), nil)
	}
	c, err := config.Resolve(f)
	if err != nil {
		return err
	}
	withSbinPath()
	log := logging.New(c.LogLevel)
	sock, err := fromSystemd(c, log)
	if err != nil {
		return err
	}
	for _, w := range c.Warnings { // daemon.json's
		log.Warn("WARNING: " + w)
	}
	log.Info("paths", "socket", c.Socket, "state", c.StateDir, "data", c.DataRoot, "runtime-dir", c.RuntimeDirSource, "config", c.ConfigFile)
	if err := os.MkdirAll(c.DataRoot, 0o700); err != nil {
		return fmt.Errorf("data root: %w", err)
	}
	inst, err := acquire(c, sock == nil)
	if err != nil {
		return err
	}
	defer inst.release()

	if config.RealRoot() {
		return runEngine(ctx, c, log, sock)
	}
	items := preflight.Run(ctx, preflight.DefaultEnv())
	if err := preflight.Fatal(items); err != nil {
		return err
	}
	idmap := rootless.IDMapFull
	c.Warnings = append(c.Warnings, preflight.Warnings(items)...)
	switch {
	case preflight.SingleUID(items):
		idmap = rootless.IDMapSingle
		log.Warn("WARNING: running in single-UID mode: newuidmap/newgidmap or subuid/subgid ranges are missing; " +
			preflight.SingleUIDLimits + ". Run `hutch check` for the fix.")
	case c.IDMap == "single":
		idmap = rootless.IDMapSingle
		w := "running in single-UID mode (--idmap=single): " + preflight.SingleUIDLimits
		log.Warn("WARNING: " + w)
		c.Warnings = append(c.Warnings, w)
	}
	if err := chooseNetwork(c, items, log); err != nil {
		return err
	}
	os.Setenv(config.EnvConfig, c.Encode())
	if sock != nil {
		// Before the live-restore path too: its re-execution keeps the
		// pid and this descriptor.
		if err := activation.Pass(sock); err != nil {
			return err
		}
	}
	if c.LiveRestore || keeperRuns(c) {
		return runKept(inst, c, idmap, log)
	}
	return execNamespaces(inst, c, idmap)
}

// execNamespaces hands the rest of the daemon's life over to hutch-ns
// (rootless.ExecHost): this process becomes it, keeping its pid, stdio and
// the instance lock; it runs this binary inside the namespaces as the
// engine and removes the pid file and socket when the engine stops.
func execNamespaces(inst *instance, c *config.Config, idmap rootless.IDMap) error {
	bin, err := helperBinary("hutch-ns", "HUTCH_NS")
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return rootless.ExecHost(bin, rootless.Handover{
		Parent: rootless.ParentOptions{
			StateDir: filepath.Join(c.StateDir, "rootlesskit"),
			IDMap:    idmap,
			Network:  c.Network,
			Engine:   self,
		},
		LockFD:   int(inst.lock.Fd()),
		PidFile:  inst.pidFile,
		Socket:   inst.socket,
		LogLevel: c.LogLevel,
	})
}

// runEngine serves the API: the engine behind the API server on the socket
// (sock when systemd passed it to this process, as real root).
func runEngine(ctx context.Context, c *config.Config, log *slog.Logger, sock *os.File) error {
	store, err := storage.Open(ctx, storage.Options{
		GraphRoot: filepath.Join(c.DataRoot, "storage"),
		RunRoot:   filepath.Join(c.StateDir, "storage"),
		SingleUID: rootless.CurrentIDMap() == rootless.IDMapSingle,
		Logger:    log,

		InsecureRegistries: c.InsecureRegistries,
		Mirrors:            c.RegistryMirrors,
	})
	if err != nil {
		return err
	}
	defer store.Close()
	shimBin, err := helperBinary("hutch-shim", "HUTCH_SHIM")
	if err != nil {
		return err
	}
	runtimeBin, err := helperBinary("hutch-runtime", "HUTCH_RUNTIME")
	if err != nil {
		return err
	}
	initBin, err := helperBinary("hutch-init", "HUTCH_INIT")
	if err != nil {
		log.Warn("--init will not work", "err", err)
	}
	netns := ""
	var netDriver enet.Driver
	if c.Network && rootless.Inside() {
		netns = filepath.Join(rootless.StateDir(), "netns")
		d, err := rootlessnet.New(ctx, rootlessnet.Options{
			DetachedNetNS: netns,
			SandboxDir:    filepath.Join(c.StateDir, "netns"),
			PortAPI:       filepath.Join(rootless.StateDir(), "api.sock"),
			Uplink:        "tap0",
			// slirp4netns's fixed addresses: the host's loopback and its
			// DNS forwarder.
			HostGateway: netip.MustParseAddr("10.0.2.2"),
			Nameserver:  netip.MustParseAddr("10.0.2.3"),
			Logger:      log,
		})
		if err != nil {
			return fmt.Errorf("networks: %w", err)
		}
		defer d.Close()
		if w := d.Warning(); w != "" {
			c.Warnings = append(c.Warnings, w)
		}
		netDriver = d
	}
	engineID, err := engine.LoadID(c.DataRoot)
	if err != nil {
		return err
	}
	netOpts := enet.Options{Root: filepath.Join(c.DataRoot, "networks"), Driver: netDriver, Logger: log, EngineID: engineID}
	if err := addressPlan(c, &netOpts); err != nil {
		return err
	}
	dns, err := dnsDefaults(c)
	if err != nil {
		return err
	}
	netOpts.DNS = dns.Servers
	networks, err := enet.New(ctx, netOpts)
	if err != nil {
		return err
	}
	defer networks.Close()
	eng, err := engine.New(ctx, engine.Options{
		Images:        store,
		StateDir:      c.StateDir,
		ShimBinary:    shimBin,
		RuntimeBinary: runtimeBin,
		InitBinary:    initBin,
		NetNS:         netns,
		Networks:      networks,
		Debug:         c.LogLevel == "debug",
		DataRoot:      c.DataRoot,
		Rootless:      rootless.Inside(),
		IDMap:         string(rootless.CurrentIDMap()),
		Warnings:      c.Warnings,
		LiveRestore:   c.LiveRestore && rootless.Inside(),
		APIVersion:    apiserver.MaxAPIVersion,
		MinAPIVersion: apiserver.MinAPIVersion,
		Logger:        log,
		LogConfig:     containertypes.LogConfig{Type: c.LogDriver, Config: c.LogOpts},
		DNS:           dns,
		// Docker's switch, read from the daemon's environment as Docker does.
		LegacyLinkEnv:  os.Getenv("DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS") == "1",
		SeccompProfile: c.SeccompProfile,
	})
	if err != nil {
		return err
	}
	defer log.Info("stopped") // after the engine's Close: its containers stopped
	defer eng.Close()
	l, own, err := apiListener(c, sock)
	if err != nil {
		return err
	}
	if own {
		defer os.Remove(c.Socket)
	}
	bk := buildkitProxy(c, runtimeBin, log)
	defer bk.Close()
	sw := swarmProxy(c, log)
	defer sw.Close()
	srv := apiserver.New(eng, apiserver.Options{Logger: log, Version: version.Version, BuildKit: bk, Swarm: sw})
	tracker := newTracker(c, eng, bk, sw, log)
	l, wake := tracker.Listener(ctx, l, c.IdleExit > 0)
	go tracker.Run(ctx, wake)
	// An idle exit ends the unix socket's Serve; this ends the TCP one's.
	serveCtx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	// A swarm's node comes back with the engine: hutch-swarm talks to the
	// engine's API, served from here on.
	go func() {
		if err := sw.Resume(ctx); err != nil {
			log.Error("swarm mode: the node does not start again", "err", err)
		}
	}()
	var tcpErr chan error
	if c.TCP != "" {
		tl, err := listenTCP(c, func(l net.Listener) net.Listener { l, _ = tracker.Listener(ctx, l, false); return l })
		if err != nil {
			l.Close()
			return err
		}
		tcpErr = make(chan error, 1)
		go func() { tcpErr <- srv.Serve(serveCtx, tl) }()
	}
	log.Info("API listening", "host", "unix://"+c.Socket, "tcp", c.TCP, "uid", os.Getuid(), "host-uid", rootless.HostUID(), "idmap", rootless.CurrentIDMap(), "activated", !own, "idle-exit", time.Duration(c.IdleExit))
	err = srv.Serve(serveCtx, l)
	if errors.Is(err, idle.ErrIdle) {
		log.Info("idle: no container running and no client connected", "for", time.Duration(c.IdleExit))
		err = nil
	}
	stopServing()
	if tcpErr != nil {
		if terr := <-tcpErr; err == nil {
			err = terr
		}
	}
	log.Info("API closed")
	return err
}

// buildkitProxy is the engine's way to hutch-buildkit, which it starts
// at the first build. Without the binary, /_ping offers the classic
// builder only.
func buildkitProxy(c *config.Config, runtimeBin string, log *slog.Logger) *proxy.Proxy {
	bin, err := helperBinary("hutch-buildkit", "HUTCH_BUILDKIT")
	if err != nil {
		log.Warn("BuildKit builds will not work; docker build needs DOCKER_BUILDKIT=0", "err", err)
		bin = ""
	}
	return proxy.New(proxy.Options{
		Binary:             bin,
		Root:               filepath.Join(c.DataRoot, "buildkit"),
		StateDir:           filepath.Join(c.StateDir, "buildkit"),
		EngineSocket:       c.Socket,
		RuntimeBinary:      runtimeBin,
		InsecureRegistries: c.InsecureRegistries,
		DNS:                c.DNS,
		Debug:              c.LogLevel == "debug",
		Log:                log,
		IdleExit:           buildkitIdle,
	})
}

// swarmProxy is the engine's way to hutch-swarm, which it starts at swarm
// init or join, or now when a swarm's state is on disk.
func swarmProxy(c *config.Config, log *slog.Logger) *swarmproxy.Proxy {
	bin, err := helperBinary("hutch-swarm", "HUTCH_SWARM")
	if err != nil {
		log.Debug("swarm mode is not available", "err", err)
		bin = ""
	}
	return swarmproxy.New(swarmproxy.Options{
		Binary:       bin,
		Root:         filepath.Join(c.DataRoot, "swarm"),
		StateDir:     filepath.Join(c.StateDir, "swarm"),
		EngineSocket: c.Socket,
		Debug:        c.LogLevel == "debug",
		Log:          log,
	})
}

// buildkitIdle is how long hutch-buildkit (40 MiB or so once it has built)
// stays after its last connection; builds come in bursts.
const buildkitIdle = 5 * time.Minute

// helperBinary finds one of hutch's helper programs: $env, else beside the
// hutch binary, else on PATH.
func helperBinary(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found: install it beside the hutch binary (make build puts it in bin/)", name)
}

// listenTCP listens on c.TCP, with TLS unless --insecure-tcp; with a CA,
// clients must present a certificate it signed (Docker's --tlsverify).
// wrap wraps the TCP listener, below TLS.
func listenTCP(c *config.Config, wrap func(net.Listener) net.Listener) (net.Listener, error) {
	l, err := net.Listen("tcp", c.TCP)
	if err != nil {
		return nil, err
	}
	l = wrap(l)
	if c.InsecureTCP && c.TLSCert == "" {
		slog.Warn("WARNING: serving the API on tcp://" + c.TCP + " without TLS (--insecure-tcp): anyone who reaches it controls your containers")
		return l, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSCACert != "" {
		pem, err := os.ReadFile(c.TLSCACert)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			l.Close()
			return nil, fmt.Errorf("TLS CA %s: no certificate found", c.TLSCACert)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tls.NewListener(l, cfg), nil
}

// listenUnix listens on a socket that only the user can open (0600).
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// withSbinPath adds the sbin directories to PATH where they are missing
// (a Debian user's shell has none): the tools the namespaces need (nft,
// which keeps the client's address on published ports; ip; sysctl) live
// there. The namespaces and the engine inherit it.
func withSbinPath() {
	dirs := filepath.SplitList(os.Getenv("PATH"))
	for _, d := range []string{"/usr/local/sbin", "/usr/sbin", "/sbin"} {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	os.Setenv("PATH", strings.Join(dirs, string(os.PathListSeparator)))
}
