// Package config resolves where hutch keeps its socket, state and data (the
// contract in docs/design.md) from the environment, daemon.json and flags. The CLI
// uses it to find the daemon without linking the engine.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Config is everything the daemon needs, resolved once on the host and
// handed to the processes inside the namespaces (where uid and the view of
// /run differ) through the environment.
type Config struct {
	// Socket is the path of the API socket.
	Socket string `json:"socket"`
	// TCP, when set, is a TCP address to serve the API on as well
	// (--host tcp://…). It needs TLS (TLSCert, TLSKey; TLSCACert to verify
	// clients) unless InsecureTCP says otherwise.
	TCP         string `json:"tcp,omitempty"`
	TLSCert     string `json:"tlscert,omitempty"`
	TLSKey      string `json:"tlskey,omitempty"`
	TLSCACert   string `json:"tlscacert,omitempty"`
	InsecureTCP bool   `json:"insecure_tcp,omitempty"`
	// StateDir holds runtime state: pid file, lock, rootlesskit, shim sockets.
	StateDir string `json:"state_dir"`
	// DataRoot holds persistent data: storage, container records, logs.
	DataRoot string `json:"data_root"`
	// RuntimeDirSource says how the runtime dir was found, for the log.
	RuntimeDirSource string `json:"runtime_dir_source"`
	// ConfigFile is the daemon.json that was read ("" when absent).
	ConfigFile string `json:"config_file"`
	LogLevel   string `json:"log_level"`
	// IDMap is "auto" (subuid ranges when present) or "single".
	IDMap string `json:"idmap"`
	// Network is false for --network=none (no slirp4netns).
	Network bool `json:"network"`
	// NetworkChosen is true when --network named slirp4netns or none: the
	// daemon then does not fall back to none where slirp4netns cannot run.
	NetworkChosen      bool     `json:"network_chosen,omitempty"`
	InsecureRegistries []string `json:"insecure_registries,omitempty"`
	RegistryMirrors    []string `json:"registry_mirrors,omitempty"`
	// LogDriver and LogOpts are the log driver of containers that name
	// none, and its options (daemon.json's log-driver and log-opts).
	LogDriver string            `json:"log_driver,omitempty"`
	LogOpts   map[string]string `json:"log_opts,omitempty"`
	// BIP is daemon.json's "bip": the default bridge's gateway address
	// and subnet ("10.200.0.1/24"); "" lets it take the first free pool.
	BIP string `json:"bip,omitempty"`
	// AddressPools is daemon.json's "default-address-pools": where
	// networks without a subnet get one (Docker's defaults when empty).
	AddressPools []AddressPool `json:"address_pools,omitempty"`
	// DNS, DNSSearch and DNSOpts are daemon.json's dns, dns-search and
	// dns-opts: each is what a container that gives none of its own gets.
	DNS       []string `json:"dns,omitempty"`
	DNSSearch []string `json:"dns_search,omitempty"`
	DNSOpts   []string `json:"dns_opts,omitempty"`
	// SeccompProfile is daemon.json's seccomp-profile: "builtin" (or
	// empty) for Docker's default profile, "unconfined", or the path of a
	// profile in Docker's JSON format, read by the engine at its start.
	SeccompProfile string `json:"seccomp_profile,omitempty"`
	// LiveRestore keeps containers running while no engine runs: the
	// namespaces and the network outlive the engine (docs/rootless.md).
	LiveRestore bool `json:"live_restore,omitempty"`
	// IdleExit, when not zero, is how long the daemon stays with nothing
	// to do (no container running, no client connected) before it exits
	// (--idle-exit, daemon.json's idle-exit). Socket activation starts it
	// again at the next connection.
	IdleExit Duration `json:"idle_exit,omitempty"`
	// Warnings found on the host (preflight), shown in /info.
	Warnings []string `json:"warnings,omitempty"`
}

// envConfig carries the resolved Config into the namespaces.
const EnvConfig = "_HUTCH_DAEMON_CONFIG"

// fileConfig is the subset of Docker's daemon.json that hutch reads.
type fileConfig struct {
	DataRoot           string            `json:"data-root"`
	LogLevel           string            `json:"log-level"`
	InsecureRegistries []string          `json:"insecure-registries"`
	RegistryMirrors    []string          `json:"registry-mirrors"`
	LogDriver          string            `json:"log-driver"`
	LogOpts            map[string]string `json:"log-opts"`
	Hosts              []string          `json:"hosts"`
	TLSCert            string            `json:"tlscert"`
	TLSKey             string            `json:"tlskey"`
	TLSCACert          string            `json:"tlscacert"`
	BIP                string            `json:"bip"`
	AddressPools       []AddressPool     `json:"default-address-pools"`
	DNS                []string          `json:"dns"`
	DNSSearch          []string          `json:"dns-search"`
	DNSOpts            []string          `json:"dns-opts"`
	SeccompProfile     string            `json:"seccomp-profile"`
	LiveRestore        *bool             `json:"live-restore"`
	IdleExit           string            `json:"idle-exit"`
	// ignored is the warning about the settings hutch does not read.
	ignored string
}

// ignoredKeys are the settings of daemon.json b that hutch does not read
// (it reads a subset of Docker's, fileConfig), sorted.
func ignoredKeys(b []byte) []string {
	var all map[string]json.RawMessage
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	known := map[string]bool{}
	t := reflect.TypeOf(fileConfig{})
	for i := range t.NumField() {
		known[strings.Split(t.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	var out []string
	for k := range all {
		if !known[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// loadFile reads daemon.json; a missing file is no error. The settings it
// has that hutch does not read are told in a warning.
func loadFile(path string) (*fileConfig, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &fileConfig{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var fc fileConfig
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&fc); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if keys := ignoredKeys(b); len(keys) > 0 {
		fc.ignored = fmt.Sprintf("%s: hutch does not read these settings of Docker's daemon.json, which have no effect: %s", path, strings.Join(keys, ", "))
	}
	if fc.BIP != "" {
		if err := checkBIP(fc.BIP); err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, a := range fc.DNS {
		if _, err := netip.ParseAddr(a); err != nil {
			return nil, false, fmt.Errorf("%s: dns: %q is not an IP address", path, a)
		}
	}
	if err := checkPools(fc.AddressPools); err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if fc.IdleExit != "" {
		if _, err := ParseIdleExit(fc.IdleExit); err != nil {
			return nil, false, fmt.Errorf("%s: %w", path, err)
		}
	}
	return &fc, true, nil
}

// Host is one --host value: a unix socket path or a TCP address.
type Host struct {
	Socket string // absolute path, for unix://
	TCP    string // host:port, for tcp://
}

// ParseHost reads a --host value: unix:///path or tcp://host:port.
func ParseHost(h string) (Host, error) {
	switch {
	case strings.HasPrefix(h, "unix://"):
		p := strings.TrimPrefix(h, "unix://")
		if !filepath.IsAbs(p) {
			return Host{}, fmt.Errorf("--host %q: the socket path must be absolute", h)
		}
		return Host{Socket: filepath.Clean(p)}, nil
	case strings.HasPrefix(h, "tcp://"):
		addr := strings.TrimSuffix(strings.TrimPrefix(h, "tcp://"), "/")
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "" {
			return Host{}, fmt.Errorf("--host %q: want tcp://host:port", h)
		}
		return Host{TCP: net.JoinHostPort(host, port)}, nil
	case strings.HasPrefix(h, "fd://"), strings.HasPrefix(h, "npipe://"), strings.HasPrefix(h, "ssh://"):
		return Host{}, fmt.Errorf("--host %q: only unix:// and tcp:// are supported", h)
	}
	return Host{}, fmt.Errorf("--host %q: want unix:///path/to/socket or tcp://host:port", h)
}

func (c *Config) Encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Inherited returns the Config resolved by the host process, if any.
func Inherited() (*Config, bool, error) {
	v := os.Getenv(EnvConfig)
	if v == "" {
		return nil, false, nil
	}
	var c Config
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return nil, true, fmt.Errorf("%s: %w", EnvConfig, err)
	}
	return &c, true, nil
}
