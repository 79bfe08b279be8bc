package container

import (
	"context"
	"slices"
	"strings"
	"testing"

	containertypes "github.com/moby/moby/api/types/container"
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

// Each link of a container on the default bridge names the container it
// reaches /parent/alias, through a --network container: join; the name
// filter matches those names too, as in Docker.
func TestLinkNames(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	db := mustCreate(t, s, newContainer("db", nil))
	side := newContainer("side", nil)
	side.HostConfig.NetworkMode = containertypes.NetworkMode("container:" + db.ID)
	mustCreate(t, s, side)
	web := newContainer("web", nil)
	web.HostConfig.Links = []string{"db:database", "db", "side:car", "nosuch:x", "db:database"}
	mustCreate(t, s, web)
	user := newContainer("user", nil)
	user.HostConfig.NetworkMode = "mynet"
	user.HostConfig.Links = []string{"db:ignored"}
	mustCreate(t, s, user)

	got := s.LinkNames()
	if want := []string{"/web/car", "/web/database", "/web/db"}; !slices.Equal(got[db.ID], want) || len(got) != 1 {
		t.Errorf("LinkNames = %v, want %v for db", got, want)
	}
	for _, name := range []string{"database", "/web/database", "web/car"} {
		list, err := s.List(ctx, ListOptions{All: true, Filters: Filters{"name": {name: true}}})
		if err != nil || len(list) == 0 || list[0].ID != db.ID {
			var names []string
			for _, c := range list {
				names = append(names, c.Name)
			}
			t.Errorf("name=%s lists %v, %v; want db", name, names, err)
		}
	}
}
