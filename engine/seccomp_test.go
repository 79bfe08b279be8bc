package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hutch-engine/hutch/engine/spec"
)

func TestLoadSeccompDefault(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO"}]}`), 0o600)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"defaultAction":"SCMP_ACT_SOMETIMES"}`), 0o600)
	for _, tc := range []struct {
		setting, name, profile, err string
	}{
		{setting: "", name: spec.SeccompBuiltin},
		{setting: "builtin", name: spec.SeccompBuiltin},
		{setting: "unconfined", name: spec.SeccompUnconfined, profile: spec.SeccompUnconfined},
		{setting: good, name: good, profile: "mkdir"},
		{setting: filepath.Join(dir, "missing.json"), err: "opening seccomp profile (" + filepath.Join(dir, "missing.json") + ") failed"},
		{setting: bad, err: "SCMP_ACT_SOMETIMES"},
	} {
		d, err := loadSeccompDefault(tc.setting)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.setting, err, tc.err)
			}
			continue
		}
		if err != nil || d.name != tc.name || !strings.Contains(d.profile, tc.profile) || (tc.profile == "" && d.profile != "") {
			t.Errorf("%q: %+v %v", tc.setting, d, err)
		}
		var in spec.Input
		d.input(&in)
		if in.SeccompProfile != d.profile || in.NoSeccomp != d.off {
			t.Errorf("%q: input %q %v", tc.setting, in.SeccompProfile, in.NoSeccomp)
		}
	}
}
