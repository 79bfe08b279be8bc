package container

import (
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	for _, c := range []struct{ in, name, alias string }{
		{"db", "db", "db"},
		{"db:database", "db", "database"},
		{"/db:/web/database", "db", "database"},
	} {
		name, alias, err := ParseLink(c.in)
		if err != nil || name != c.name || alias != c.alias {
			t.Errorf("ParseLink(%q) = %q %q %v", c.in, name, alias, err)
		}
	}
	for _, bad := range []string{"", "a:b:c", ":x", "x:", "/", "db:/web/"} {
		if n, a, err := ParseLink(bad); err == nil {
			t.Errorf("ParseLink(%q) = %q %q, want an error", bad, n, a)
		}
	}
}

// Links come from clients: whatever ParseLink takes has a name and an
// alias, neither with a colon, the alias without a slash.
func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"db", "db:alias", "/db:/web/alias", "a:b:c", "/:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, alias, err := ParseLink(s)
		if err != nil {
			return
		}
		if name == "" || alias == "" || strings.Contains(name, ":") || strings.ContainsAny(alias, ":/") || strings.HasPrefix(name, "/") {
			t.Fatalf("ParseLink(%q) = %q %q", s, name, alias)
		}
	})
}
