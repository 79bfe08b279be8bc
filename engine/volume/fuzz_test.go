package volume

import (
	"path/filepath"
	"regexp"
	"testing"
)

// dockerVolumeName is Docker's own rule for local volume names, the
// oracle for the fuzz test.
var dockerVolumeName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// FuzzValidName: a name is valid exactly when Docker's rule says so, and
// a valid name is one entry right under the store's root, not a scratch
// entry (those start with a dot).
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"data", "a", "..", ".x", "a/b", "../x", "x\n", "a-b_c.d", "\xff\xfe", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ok := ValidName(name)
		if want := dockerVolumeName.MatchString(name); ok != want {
			t.Fatalf("ValidName(%q) = %v, Docker's rule says %v", name, ok, want)
		}
		if ok && (filepath.Dir(filepath.Join("/root", name)) != "/root" || name[0] == '.') {
			t.Fatalf("valid %q is not one entry under the root", name)
		}
	})
}
