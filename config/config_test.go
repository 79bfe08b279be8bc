package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseHost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Host
		err  string
	}{
		{"unix:///run/user/1000/hutch.sock", Host{Socket: "/run/user/1000/hutch.sock"}, ""},
		{"unix:///a/../b.sock", Host{Socket: "/b.sock"}, ""},
		{"unix://rel.sock", Host{}, "absolute"},
		{"tcp://127.0.0.1:2376", Host{TCP: "127.0.0.1:2376"}, ""},
		{"tcp://[::1]:2376/", Host{TCP: "[::1]:2376"}, ""},
		{"tcp://noport", Host{}, "want tcp://host:port"},
		{"fd://", Host{}, "only unix:// and tcp://"},
		{"/plain/path", Host{}, "want unix://"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHost(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseHost(%q) = %+v, %v; want error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseHost(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestTCPNeedsTLS(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if _, err := Resolve(Flags{Hosts: []string{"tcp://127.0.0.1:2376"}}); err == nil || !strings.Contains(err.Error(), "--insecure-tcp") {
		t.Errorf("tcp without TLS: %v", err)
	}
	c, err := Resolve(Flags{Hosts: []string{"tcp://127.0.0.1:2376"}, InsecureTCP: true})
	if err != nil || c.TCP != "127.0.0.1:2376" || c.Socket == "" {
		t.Errorf("insecure tcp: %+v %v (the unix socket stays)", c, err)
	}
	c, err = Resolve(Flags{Hosts: []string{"tcp://127.0.0.1:2376"}, TLSCert: "/c", TLSKey: "/k"})
	if err != nil || c.TLSCert != "/c" {
		t.Errorf("tls tcp: %+v %v", c, err)
	}
	if _, err := Resolve(Flags{Hosts: []string{"tcp://127.0.0.1:1", "tcp://127.0.0.1:2"}, InsecureTCP: true}); err == nil {
		t.Error("two tcp hosts accepted")
	}
}

func TestResolveLayers(t *testing.T) {
	if RealRoot() {
		t.Log("running as real root: the rootless defaults are covered by the integration tests")
	}
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	os.MkdirAll(filepath.Join(base, "run"), 0o700)
	cfgFile := filepath.Join(base, "daemon.json")
	os.WriteFile(cfgFile, []byte(`{"data-root": "/srv/hutch", "log-level": "debug", "insecure-registries": ["reg.local:5000"], "registry-mirrors": ["https://mirror.local"], "seccomp-profile": "unconfined", "unknown-key": 1}`), 0o600)

	c, err := Resolve(Flags{ConfigFile: cfgFile})
	if err != nil {
		t.Fatal(err)
	}
	if c.DataRoot != "/srv/hutch" || c.LogLevel != "debug" || c.ConfigFile != cfgFile {
		t.Errorf("daemon.json not applied: %+v", c)
	}
	if len(c.InsecureRegistries) != 1 || len(c.RegistryMirrors) != 1 {
		t.Errorf("registries not read: %+v", c)
	}
	if c.SeccompProfile != "unconfined" {
		t.Errorf("seccomp-profile not read: %q", c.SeccompProfile)
	}
	// A setting of Docker's that hutch does not read is told, not refused.
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "hutch does not read these settings of Docker's daemon.json, which have no effect: unknown-key") {
		t.Errorf("warnings: %q, want one naming unknown-key", c.Warnings)
	}
	c, err = Resolve(Flags{ConfigFile: cfgFile, DataRoot: "/flag/wins", LogLevel: "warn", IDMap: "single", Network: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DataRoot != "/flag/wins" || c.LogLevel != "warn" || c.IDMap != "single" || c.Network {
		t.Errorf("flags do not override daemon.json: %+v", c)
	}
	for _, tc := range []struct {
		flag            string
		network, chosen bool
	}{{"", true, false}, {"auto", true, false}, {"slirp4netns", true, true}, {"none", false, true}} {
		c, err := Resolve(Flags{ConfigFile: cfgFile, Network: tc.flag})
		if err != nil || c.Network != tc.network || c.NetworkChosen != tc.chosen {
			t.Errorf("--network %q: network %v chosen %v (%v), want %v %v", tc.flag, c.Network, c.NetworkChosen, err, tc.network, tc.chosen)
		}
	}
	for _, bad := range []Flags{{IDMap: "weird"}, {Network: "bridge"}, {DataRoot: "relative"}, {Hosts: []string{"ssh://x"}}} {
		if _, err := Resolve(bad); err == nil {
			t.Errorf("Resolve(%+v) accepted bad input", bad)
		}
	}
	os.WriteFile(cfgFile, []byte(`{"data-root": `), 0o600)
	if _, err := Resolve(Flags{ConfigFile: cfgFile}); err == nil || !strings.Contains(err.Error(), cfgFile) {
		t.Errorf("broken daemon.json: %v, want an error naming the file", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	c := &Config{Socket: "/s", StateDir: "/st", DataRoot: "/d", Network: true, Warnings: []string{"w"}}
	t.Setenv(EnvConfig, c.Encode())
	got, ok, err := Inherited()
	if err != nil || !ok || got.Socket != "/s" || got.DataRoot != "/d" || !got.Network || got.Warnings[0] != "w" {
		t.Fatalf("Inherited() = %+v, %v, %v", got, ok, err)
	}
}

func TestAddressPlan(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	os.MkdirAll(filepath.Join(base, "run"), 0o700)
	cfgFile := filepath.Join(base, "daemon.json")
	os.WriteFile(cfgFile, []byte(`{"bip": "10.200.0.1/24", "default-address-pools": [{"base": "10.124.0.0/16", "size": 24}, {"base": "fd00:9::/48", "size": 64}]}`), 0o600)
	c, err := Resolve(Flags{ConfigFile: cfgFile})
	if err != nil {
		t.Fatal(err)
	}
	if c.BIP != "10.200.0.1/24" || len(c.AddressPools) != 2 || c.AddressPools[0] != (AddressPool{"10.124.0.0/16", 24}) || c.AddressPools[1] != (AddressPool{"fd00:9::/48", 64}) || len(c.Warnings) != 0 {
		t.Errorf("bip and pools: %q %+v, warnings %q", c.BIP, c.AddressPools, c.Warnings)
	}
	for bad, msg := range map[string]string{
		`{"bip": "10.200.0.1"}`:    "want the bridge's address and prefix length",
		`{"bip": "10.200.0.0/24"}`: "the address is the subnet's own; give the bridge's, e.g. 10.200.0.1/24",
		`{"bip": "10.200.0.1/31"}`: "has no room for containers",
		`{"bip": "fd00::1/64"}`:    "only IPv4",
		`{"default-address-pools": [{"base": "10.124.0.0/16", "size": 8}]}`:         "the size must be between 16 (the base's) and 30",
		`{"default-address-pools": [{"base": "10.124.0.1/16", "size": 24}]}`:        "is not a network address: want 10.124.0.0/16",
		`{"default-address-pools": [{"base": "nonsense", "size": 24}]}`:             "base \"nonsense\"",
		`{"default-address-pools": [{"base": "fd00::/48", "size": 127}]}`:           "the size must be between 48 (the base's) and 126",
		`{"default-address-pools": [{"base": "::ffff:10.0.0.0/104", "size": 120}]}`: "write an IPv4 base as IPv4",
		`{"dns": ["192.0.2.1", "nope"]}`:                                            "dns: \"nope\" is not an IP address",
	} {
		os.WriteFile(cfgFile, []byte(bad), 0o600)
		if _, err := Resolve(Flags{ConfigFile: cfgFile}); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), cfgFile) {
			t.Errorf("%s: %v, want an error naming the file and saying %q", bad, err, msg)
		}
	}
}

func TestResolveLiveRestore(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	os.MkdirAll(filepath.Join(base, "run"), 0o700)
	on, off := true, false
	tests := []struct {
		name string
		file string // daemon.json; "" for none
		flag *bool
		want bool // rootless; real root never has it
	}{
		{"default", "", nil, true},
		{"daemon.json off", `{"live-restore": false}`, nil, false},
		{"daemon.json on", `{"live-restore": true}`, nil, true},
		{"flag over daemon.json", `{"live-restore": false}`, &on, true},
		{"flag off", "", &off, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgFile := filepath.Join(base, "none.json")
			if tt.file != "" {
				cfgFile = filepath.Join(base, "daemon.json")
				if err := os.WriteFile(cfgFile, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Resolve(Flags{ConfigFile: cfgFile, LiveRestore: tt.flag})
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want && !RealRoot(); c.LiveRestore != want {
				t.Errorf("LiveRestore = %v, want %v", c.LiveRestore, want)
			}
			asked := tt.flag != nil && *tt.flag || tt.flag == nil && strings.Contains(tt.file, "true")
			if RealRoot() && asked {
				if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "live-restore is not supported as real root") {
					t.Errorf("warnings as real root: %q", c.Warnings)
				}
			} else if len(c.Warnings) != 0 {
				t.Errorf("warnings: %q (live-restore is a setting hutch reads)", c.Warnings)
			}
		})
	}
	if _, err := Resolve(Flags{ConfigFile: writeTemp(t, base, `{"live-restore": "yes"}`)}); err == nil {
		t.Error(`"live-restore": "yes" accepted`)
	}
}

func writeTemp(t *testing.T, dir, content string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}
func TestIdleExit(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(base, "run"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	os.MkdirAll(filepath.Join(base, "run"), 0o700)
	cfgFile := filepath.Join(base, "daemon.json")
	os.WriteFile(cfgFile, []byte(`{"idle-exit": "10m"}`), 0o600)
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{{"", 10 * time.Minute}, {"90s", 90 * time.Second}, {"0", 0}} {
		c, err := Resolve(Flags{ConfigFile: cfgFile, IdleExit: tc.flag})
		if err != nil || time.Duration(c.IdleExit) != tc.want {
			t.Errorf("--idle-exit %q over daemon.json's 10m: %v (%v), want %v", tc.flag, time.Duration(c.IdleExit), err, tc.want)
			continue
		}
		t.Setenv(EnvConfig, c.Encode())
		got, _, err := Inherited()
		if err != nil || got.IdleExit != c.IdleExit {
			t.Errorf("idle-exit %v does not survive the hand-over: %v (%v)", tc.want, got.IdleExit, err)
		}
	}
	for _, bad := range []string{"5", "-1m", "forever", "10ms"} {
		if _, err := Resolve(Flags{ConfigFile: cfgFile, IdleExit: bad}); err == nil || !strings.Contains(err.Error(), "idle-exit") {
			t.Errorf("--idle-exit %q: %v, want an error naming idle-exit", bad, err)
		}
	}
	os.WriteFile(cfgFile, []byte(`{"idle-exit": "soon"}`), 0o600)
	if _, err := Resolve(Flags{ConfigFile: cfgFile}); err == nil || !strings.Contains(err.Error(), cfgFile) {
		t.Errorf("bad idle-exit in daemon.json: %v, want an error naming the file", err)
	}
}
