package config

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hutch-engine/hutch/rootless/preflight"
)

// Flags are the command-line settings of `hutch daemon`; empty means
// "from daemon.json, else the default".
type Flags struct {
	// Hosts are the --host values (unix:// and at most one tcp://).
	Hosts       []string
	TLSCert     string
	TLSKey      string
	TLSCACert   string
	InsecureTCP bool
	DataRoot    string
	ConfigFile  string
	LogLevel    string
	IDMap       string
	Network     string // "auto" or "" (slirp4netns when it can run), "slirp4netns" or "none"
	// LiveRestore is --live-restore when given (nil: daemon.json's, else on).
	LiveRestore *bool
	// IdleExit is --idle-exit ("" when not given; "0" turns it off).
	IdleExit string
}

// RealRoot reports whether hutch runs as real root, without rootlesskit
// (preflight.RealRoot).
func RealRoot() bool { return preflight.RealRoot() }

// Resolve builds the Config on the host: the contract's paths, daemon.json,
// then flags.
func Resolve(f Flags) (*Config, error) {
	root := RealRoot()
	c := &Config{IDMap: "auto", Network: true, LogLevel: "info"}
	home, _ := os.UserHomeDir()
	xdgConfig := os.Getenv("XDG_CONFIG_HOME")
	if xdgConfig == "" {
		xdgConfig = filepath.Join(home, ".config")
	}
	c.ConfigFile = f.ConfigFile
	if c.ConfigFile == "" {
		c.ConfigFile = filepath.Join(xdgConfig, "hutch", "daemon.json")
		if root {
			c.ConfigFile = "/etc/hutch/daemon.json"
		}
	}
	fc, found, err := loadFile(c.ConfigFile)
	if err != nil {
		return nil, err
	}
	if !found {
		c.ConfigFile = ""
	}

	var runtimeDir string
	if root {
		runtimeDir, c.RuntimeDirSource = "/run", "running as root"
		c.DataRoot = "/var/lib/hutch"
	} else {
		env := preflight.DefaultEnv()
		runtimeDir, c.RuntimeDirSource, err = preflight.ResolveRuntimeDir(env)
		if err == nil && c.RuntimeDirSource == preflight.SourceTmpDir {
			// Create the fallback, then resolve again: that refuses a dir
			// planted by another user, or a symlink.
			if err := os.Mkdir(runtimeDir, 0o700); err != nil && !os.IsExist(err) {
				return nil, fmt.Errorf("runtime dir fallback: %w", err)
			}
			runtimeDir, c.RuntimeDirSource, err = preflight.ResolveRuntimeDir(env)
		}
		if err != nil {
			return nil, err
		}
		xdgData := os.Getenv("XDG_DATA_HOME")
		if xdgData == "" {
			xdgData = filepath.Join(home, ".local", "share")
		}
		c.DataRoot = filepath.Join(xdgData, "hutch")
	}
	c.StateDir = filepath.Join(runtimeDir, "hutch")
	c.Socket = filepath.Join(runtimeDir, "hutch.sock")
	if root {
		c.Socket = filepath.Join(c.StateDir, "hutch.sock")
	}

	// daemon.json, then flags.
	if fc.DataRoot != "" {
		c.DataRoot = fc.DataRoot
	}
	if fc.LogLevel != "" {
		c.LogLevel = fc.LogLevel
	}
	c.InsecureRegistries = fc.InsecureRegistries
	c.RegistryMirrors = fc.RegistryMirrors
	c.LogDriver, c.LogOpts = fc.LogDriver, fc.LogOpts
	c.BIP, c.AddressPools = fc.BIP, fc.AddressPools
	c.DNS, c.DNSSearch, c.DNSOpts = fc.DNS, fc.DNSSearch, fc.DNSOpts
	c.SeccompProfile = fc.SeccompProfile
	// On unless daemon.json or the flag says otherwise; real root keeps
	// no namespaces to restore into (docs/rootless.md).
	c.LiveRestore = true
	if fc.LiveRestore != nil {
		c.LiveRestore = *fc.LiveRestore
	}
	if f.LiveRestore != nil {
		c.LiveRestore = *f.LiveRestore
	}
	if root {
		if c.LiveRestore && (fc.LiveRestore != nil || f.LiveRestore != nil) {
			c.Warnings = append(c.Warnings, "live-restore is not supported as real root: the daemon's stop stops the containers")
		}
		c.LiveRestore = false
	}
	if fc.ignored != "" {
		c.Warnings = append(c.Warnings, fc.ignored)
	}
	hosts := f.Hosts
	if len(hosts) == 0 {
		hosts = fc.Hosts
	}
	for _, h := range hosts {
		parsed, err := ParseHost(h)
		if err != nil {
			return nil, err
		}
		switch {
		case parsed.Socket != "":
			c.Socket = parsed.Socket
		case c.TCP != "":
			return nil, fmt.Errorf("--host %q: only one tcp:// listener is supported", h)
		default:
			c.TCP = parsed.TCP
		}
	}
	c.TLSCert, c.TLSKey, c.TLSCACert = first(f.TLSCert, fc.TLSCert), first(f.TLSKey, fc.TLSKey), first(f.TLSCACert, fc.TLSCACert)
	c.InsecureTCP = f.InsecureTCP
	if c.TCP != "" && !c.InsecureTCP && (c.TLSCert == "" || c.TLSKey == "") {
		return nil, fmt.Errorf("--host tcp://%s without TLS would let anyone who reaches that address run containers as you: give --tlscert and --tlskey (and --tlscacert to verify clients), or --insecure-tcp if you really mean it", c.TCP)
	}
	if f.DataRoot != "" {
		c.DataRoot = f.DataRoot
	}
	if f.LogLevel != "" {
		c.LogLevel = f.LogLevel
	}
	switch f.IDMap {
	case "", "auto":
	case "single":
		c.IDMap = "single"
	default:
		return nil, fmt.Errorf("--idmap %q: want auto or single", f.IDMap)
	}
	switch f.Network {
	case "", "auto":
	case "slirp4netns":
		c.NetworkChosen = true
	case "none":
		c.Network, c.NetworkChosen = false, true
	default:
		return nil, fmt.Errorf("--network %q: want auto, slirp4netns or none", f.Network)
	}
	for _, v := range []string{fc.IdleExit, f.IdleExit} {
		if v == "" {
			continue
		}
		d, err := ParseIdleExit(v)
		if err != nil {
			return nil, err
		}
		c.IdleExit = Duration(d)
	}
	if !filepath.IsAbs(c.DataRoot) {
		return nil, fmt.Errorf("data-root %q must be an absolute path", c.DataRoot)
	}
	return c, nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
