package engine

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
		name, alias, err := parseLink(c.in)
		if err != nil || name != c.name || alias != c.alias {
			t.Errorf("parseLink(%q) = %q %q %v", c.in, name, alias, err)
		}
	}
	for _, bad := range []string{"", "a:b:c", ":x", "x:", "/", "db:/web/"} {
		if n, a, err := parseLink(bad); err == nil {
			t.Errorf("parseLink(%q) = %q %q, want an error", bad, n, a)
		}
	}
}

// Links come from clients: whatever parseLink takes has a name and an
// alias, neither with a colon, the alias without a slash.
func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"db", "db:alias", "/db:/web/alias", "a:b:c", "/:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, alias, err := parseLink(s)
		if err != nil {
			return
		}
		if name == "" || alias == "" || strings.Contains(name, ":") || strings.ContainsAny(alias, ":/") || strings.HasPrefix(name, "/") {
			t.Fatalf("parseLink(%q) = %q %q", s, name, alias)
		}
	})
}
