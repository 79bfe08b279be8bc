package install

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The unit files pass systemd's own check (systemd-analyze verify), for
// a user and for the system, with a binary path systemd must quote.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is missing: install Debian's systemd package (contrib/test/setup-root.sh)")
	}
	bin := filepath.Join(t.TempDir(), "a dir", "hutch")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    unitOptions
		args []string
	}{
		{"user", unitOptions{Binary: bin, Listen: "%t/hutch.sock", IdleExit: 5 * time.Minute}, []string{"--user"}},
		{"system", unitOptions{Binary: bin, Listen: "/run/hutch/hutch.sock"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := units(tc.o)
			var paths []string
			for _, name := range []string{SocketUnit, ServiceUnit} {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			rt := t.TempDir() // the user manager's runtime dir
			cmd := exec.Command(analyze, append(append([]string{"verify"}, tc.args...), paths...)...)
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Fatalf("systemd-analyze verify: %v\n%s\n--- %s ---\n%s--- %s ---\n%s", err, out, SocketUnit, files[SocketUnit], ServiceUnit, files[ServiceUnit])
			}
			svc := files[ServiceUnit]
			want := "ExecStart=" + systemdQuote(bin) + " daemon"
			if tc.o.IdleExit > 0 {
				want += " --idle-exit 5m0s"
			}
			if !strings.Contains(svc, want+"\n") {
				t.Errorf("the service runs something else than %q:\n%s", want, svc)
			}
			if !strings.Contains(files[SocketUnit], "ListenStream="+tc.o.Listen+"\n") {
				t.Errorf("the socket listens elsewhere than %s:\n%s", tc.o.Listen, files[SocketUnit])
			}
		})
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/local/bin/hutch":  "/usr/local/bin/hutch",
		"/home/a b/hutch":       `"/home/a b/hutch"`,
		`/x/"q"/hutch`:          `"/x/\"q\"/hutch"`,
		"/opt/100%/bin/hutch":   "/opt/100%%/bin/hutch",
		`/a\b/hutch`:            `"/a\\b/hutch"`,
		"/home/a b/50%/hutch":   `"/home/a b/50%%/hutch"`,
		"/usr/local/bin/hutch ": `"/usr/local/bin/hutch "`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// The context is the docker CLI's own files: written once, unchanged on
// a second write, and removed with the current-context setting while
// the rest of config.json stays.
func TestContextFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {"reg.local": {"auth": "eA=="}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := writeContext(dir, "/run/user/1000/hutch.sock")
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", "ea7f9327792e08f6af7c94810f549474d7485453531f3169a7b5c4a00c9896f9", "meta.json"))
	if err != nil {
		t.Fatalf("meta.json is not where the docker CLI looks (sha256 of the name): %v", err)
	}
	var m contextMeta
	if err := json.Unmarshal(b, &m); err != nil || m.Name != "hutch" || m.Endpoints["docker"].Host != "unix:///run/user/1000/hutch.sock" {
		t.Errorf("meta.json: %s (%v)", b, err)
	}
	if changed, err := writeContext(dir, "/run/user/1000/hutch.sock"); err != nil || changed {
		t.Errorf("second write: changed %v, %v", changed, err)
	}
	if changed, err := writeContext(dir, "/run/user/1000/other.sock"); err != nil || !changed {
		t.Errorf("write of another socket: changed %v, %v", changed, err)
	}
	if err := setCurrentContext(dir, ContextName); err != nil {
		t.Fatal(err)
	}
	if cur, err := currentContext(dir); err != nil || cur != ContextName {
		t.Errorf("currentContext = %q, %v", cur, err)
	}
	if changed, err := removeContext(dir); err != nil || !changed {
		t.Fatalf("remove: changed %v, %v", changed, err)
	}
	cfg, err := readConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg["currentContext"]; ok {
		t.Errorf("currentContext left at the removed context: %s", cfg["currentContext"])
	}
	if _, ok := cfg["auths"]; !ok {
		t.Errorf("config.json lost its other settings: %v", cfg)
	}
	if _, err := os.Stat(contextDir(dir)); !os.IsNotExist(err) {
		t.Errorf("the context's directory stays: %v", err)
	}
	if changed, err := removeContext(dir); err != nil || changed {
		t.Errorf("second remove: changed %v, %v", changed, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": `), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setCurrentContext(dir, ContextName); err == nil {
		t.Error("a broken config.json was overwritten")
	}
}
