package storage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"
	"go.podman.io/image/v5/docker"
	"go.podman.io/image/v5/types"
)

// DefaultMaxConcurrentDownloads is Docker's max-concurrent-downloads default.
const DefaultMaxConcurrentDownloads = 3

// PullOptions are the per-pull settings. Auth comes from the caller's
// decoding of X-Registry-Auth and is never logged.
type PullOptions struct {
	Auth registry.AuthConfig
	// InsecureRegistries lists registries reached over plain HTTP or
	// without verifying TLS ("host[:port]" or CIDR), as daemon.json's
	// insecure-registries. Loopback registries are always insecure.
	InsecureRegistries []string
	// Mirrors are daemon.json's registry-mirrors ("https://host[:port]"):
	// tried in order for docker.io images before Docker Hub itself.
	Mirrors []string
	// Platform is "os[/arch[/variant]]"; "" means linux on this machine's
	// architecture.
	Platform string
	// MaxConcurrentDownloads limits parallel layer downloads per pull;
	// 0 means DefaultMaxConcurrentDownloads.
	MaxConcurrentDownloads int
}

// noBlobInfoCache is a directory containers/image cannot create, so that it
// keeps its blob info cache in memory: the SQLite cache costs a dozen fsyncs
// per pull (a third of a busybox pull on these disks), and into
// containers-storage reuse is found through the store's own layer indexes.
const noBlobInfoCache = "/dev/null/hutch-no-blob-info-cache"

// systemContext builds containers/image settings for one pull. Everything is
// explicit: no registries.conf, auth file, policy or cache location of the
// host or of the user's other tools is read.
func (s *Store) systemContext(ctx context.Context, domain string, opts PullOptions) (*types.SystemContext, error) {
	osName, arch, variant, err := parsePlatform(opts.Platform)
	if err != nil {
		return nil, err
	}
	var mirrors []mirror
	if domain == "docker.io" {
		if mirrors, err = parseMirrors(ctx, opts.Mirrors, opts.InsecureRegistries); err != nil {
			return nil, err
		}
	}
	conf, err := s.registriesConf(mirrors)
	if err != nil {
		return nil, err
	}
	auth, err := dockerAuth(opts.Auth)
	if err != nil {
		return nil, err
	}
	sys := &types.SystemContext{
		SystemRegistriesConfPath:    conf,
		SystemRegistriesConfDirPath: filepath.Join(s.regDir, "none"),
		RegistriesDirPath:           filepath.Join(s.regDir, "none"),
		AuthFilePath:                s.authEmpty,
		BlobInfoCacheDir:            noBlobInfoCache,
		BigFilesTemporaryDir:        s.tmpDir,
		DockerAuthConfig:            auth,
		DockerBearerRegistryToken:   opts.Auth.RegistryToken,
		DockerRegistryUserAgent:     "hutch",
		OSChoice:                    osName,
		ArchitectureChoice:          arch,
		VariantChoice:               variant,
	}
	if s.proxy != nil {
		sys.DockerProxy = s.proxy
	}
	if isInsecureRegistry(ctx, domain, opts.InsecureRegistries) {
		// Also makes containers/image fall back to plain HTTP.
		sys.DockerInsecureSkipTLSVerify = types.OptionalBoolTrue
	}
	return sys, nil
}

// Login checks credentials against a registry, as POST /auth does for
// `docker login`: auth.ServerAddress names the registry ("" or Docker Hub's
// index URL for Docker Hub). Rejected credentials return an error classed
// errdefs.ErrUnauthenticated (and ErrUnauthorized); an unreachable registry
// returns the transport error.
func (s *Store) Login(ctx context.Context, auth registry.AuthConfig, opts PullOptions) error {
	host, err := loginHost(auth.ServerAddress)
	if err != nil {
		return err
	}
	opts.Auth = auth
	sys, err := s.systemContext(ctx, host, opts)
	if err != nil {
		return err
	}
	err = docker.CheckAuth(ctx, sys, sys.DockerAuthConfig.Username, sys.DockerAuthConfig.Password, host)
	var creds docker.ErrUnauthorizedForCredentials
	if errors.As(err, &creds) {
		// Docker's words: the endpoint and the registry's answer.
		scheme, endpoint := "https", host
		if isInsecureRegistry(ctx, host, opts.InsecureRegistries) {
			scheme = "http"
		}
		if host == "docker.io" {
			endpoint = "registry-1.docker.io"
		}
		return fmt.Errorf("login attempt to %s://%s/v2/ failed with status: 401 Unauthorized%.0w%.0w", scheme, endpoint, ErrUnauthorized, errdefs.ErrUnauthenticated)
	}
	return err
}

// loginHost turns docker login's server address into a registry host.
func loginHost(addr string) (string, error) {
	switch a := strings.TrimSuffix(addr, "/"); a {
	case "", "docker.io", "index.docker.io", "registry-1.docker.io", "https://index.docker.io/v1", "https://registry-1.docker.io":
		return "docker.io", nil
	}
	s := addr
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("invalid registry address %q: %w", addr, errdefs.ErrInvalidArgument)
	}
	return u.Host, nil
}

// dockerAuth converts the X-Registry-Auth fields. A non-nil, possibly empty
// value keeps containers/image from looking for credentials in auth files.
func dockerAuth(a registry.AuthConfig) (*types.DockerAuthConfig, error) {
	out := &types.DockerAuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken}
	if out.Username == "" && out.Password == "" && a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return nil, fmt.Errorf("invalid auth field in registry credentials: %w", errdefs.ErrInvalidArgument)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, fmt.Errorf("invalid auth field in registry credentials: %w", errdefs.ErrInvalidArgument)
		}
		out.Username, out.Password = user, pass
	}
	return out, nil
}

// parsePlatform parses "os[/arch[/variant]]" with Docker's common aliases.
func parsePlatform(p string) (osName, arch, variant string, err error) {
	if p == "" {
		return "linux", runtime.GOARCH, "", nil
	}
	parts := strings.Split(strings.ToLower(p), "/")
	if len(parts) > 3 || parts[0] == "" {
		return "", "", "", fmt.Errorf("invalid platform %q: want os[/arch[/variant]]: %w", p, errdefs.ErrInvalidArgument)
	}
	osName, arch = parts[0], runtime.GOARCH
	if len(parts) > 1 {
		arch = parts[1]
	}
	if len(parts) > 2 {
		variant = parts[2]
	}
	switch arch {
	case "x86_64", "x86-64":
		arch = "amd64"
	case "aarch64":
		arch = "arm64"
	case "i386", "i686":
		arch = "386"
	case "":
		return "", "", "", fmt.Errorf("invalid platform %q: empty architecture: %w", p, errdefs.ErrInvalidArgument)
	}
	return osName, arch, variant, nil
}

// isInsecureRegistry applies Docker's rule: a registry is insecure (plain
// HTTP allowed, TLS not verified) when it is listed by host[:port], when its
// address is in a listed CIDR, or when it is on loopback (Docker's default
// insecure CIDR 127.0.0.0/8, plus localhost and ::1). Host names are resolved
// only when CIDRs are listed.
func isInsecureRegistry(ctx context.Context, hostport string, insecure []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	var nets []*net.IPNet
	for _, entry := range insecure {
		entry = strings.TrimSpace(entry)
		if _, n, err := net.ParseCIDR(entry); err == nil {
			nets = append(nets, n)
			continue
		}
		entry = strings.TrimPrefix(strings.TrimPrefix(entry, "http://"), "https://")
		if strings.EqualFold(strings.TrimSuffix(entry, "/"), hostport) {
			return true
		}
	}
	if len(nets) == 0 {
		return false
	}
	ips := []net.IP{ip}
	if ip == nil {
		addrs, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err != nil {
			return false
		}
		ips = addrs
	}
	for _, a := range ips {
		for _, n := range nets {
			if n.Contains(a) {
				return true
			}
		}
	}
	return false
}

type mirror struct {
	location string // host[:port]
	insecure bool
}

// parseMirrors validates registry-mirrors entries as Docker does: http or
// https URLs without a path. A mirror is insecure when it is http://, on
// loopback, or listed as insecure.
func parseMirrors(ctx context.Context, urls, insecure []string) ([]mirror, error) {
	var out []mirror
	for _, raw := range urls {
		s := strings.TrimSpace(raw)
		if !strings.Contains(s, "://") {
			s = "https://" + s
		}
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("invalid registry mirror %q: want http(s)://host[:port]: %w", raw, errdefs.ErrInvalidArgument)
		}
		out = append(out, mirror{
			location: u.Host,
			insecure: u.Scheme == "http" || isInsecureRegistry(ctx, u.Host, insecure),
		})
	}
	return out, nil
}

// registriesConf writes (once per distinct content) the registries.conf that
// containers/image reads instead of the host's: empty, or docker.io with its
// mirrors.
func (s *Store) registriesConf(mirrors []mirror) (string, error) {
	var b strings.Builder
	b.WriteString("# generated by hutch; do not edit\n")
	if len(mirrors) > 0 {
		b.WriteString("[[registry]]\nprefix = \"docker.io\"\nlocation = \"docker.io\"\n")
		for _, m := range mirrors {
			fmt.Fprintf(&b, "\n[[registry.mirror]]\nlocation = %s\ninsecure = %t\n", strconv.Quote(m.location), m.insecure)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	path := filepath.Join(s.regDir, "registries-"+hex.EncodeToString(sum[:8])+".conf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(s.regDir, ".registries-*")
	if err != nil {
		return "", fmt.Errorf("storage: %w", err)
	}
	_, werr := tmp.WriteString(b.String())
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("storage: writing %s: %v %v", path, werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("storage: %w", err)
	}
	return path, nil
}
