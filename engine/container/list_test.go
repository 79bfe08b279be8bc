package container

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// listFixture creates, oldest first: created1 (created), web-1 (running,
// with a volume, a network and a published port), web-2 (exited 0), db
// (exited 137, annotated), paused (another image), gone (dead, exit 2), removing
// (exited 0, being removed).
func listFixture(t *testing.T) (*Store, map[string]*Container) {
	s, _ := newStore(t)
	cs := map[string]*Container{}
	add := func(name string, labels map[string]string, fn func(*Container) error) {
		c := mustCreate(t, s, newContainer(name, labels))
		if fn != nil {
			mustUpdate(t, s, c.ID, fn)
		}
		cs[name] = c
	}
	add("created1", map[string]string{"app": "web"}, nil)
	add("web-1", map[string]string{"app": "web", "tier": "front"}, func(c *Container) error {
		c.Mounts = []containertypes.MountPoint{{Type: "volume", Name: "vol1", Destination: "/data"}}
		c.NetworkSettings = &containertypes.NetworkSettings{
			Networks: map[string]*network.EndpointSettings{"mynet": {NetworkID: "abcdef"}},
			Ports:    network.PortMap{network.MustParsePort("80/tcp"): {{HostPort: "8080"}}},
		}
		return setRunning(c)
	})
	add("web-2", map[string]string{"app": "web"}, setExited(0))
	add("db", map[string]string{"app": "db"}, func(c *Container) error {
		c.HostConfig.Annotations = map[string]string{"com.example.key": "value", "app": "x"}
		return setExited(137)(c)
	})
	add("paused", nil, func(c *Container) error {
		c.ImageID = "sha256:2222"
		if err := setRunning(c); err != nil {
			return err
		}
		return c.State.SetPaused(c.ID)
	})
	add("gone", nil, func(c *Container) error {
		if err := setExited(2)(c); err != nil {
			return err
		}
		return c.State.SetDead("")
	})
	add("removing", nil, func(c *Container) error {
		if err := setExited(0)(c); err != nil {
			return err
		}
		return c.State.SetRemoving("removing", false)
	})
	return s, cs
}

func TestList(t *testing.T) {
	s, cs := listFixture(t)
	all := []string{"removing", "gone", "paused", "db", "web-2", "web-1", "created1"}
	f := func(kv ...string) Filters {
		out := Filters{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	tests := []struct {
		name string
		opts ListOptions
		want []string
	}{
		{"running by default", ListOptions{}, []string{"paused", "web-1"}},
		{"all, newest first", ListOptions{All: true}, all},
		{"limit implies all", ListOptions{Limit: 2}, []string{"removing", "gone"}},
		{"status implies all", ListOptions{Filters: f("status", "exited")}, []string{"db", "web-2"}},
		{"status removing", ListOptions{Filters: f("status", "removing")}, []string{"removing"}},
		{"status dead", ListOptions{Filters: f("status", "dead")}, []string{"gone"}},
		{"two statuses", ListOptions{Filters: f("status", "created", "status", "paused")}, []string{"paused", "created1"}},
		{"exited needs all", ListOptions{Filters: f("exited", "137")}, []string{}},
		{"exited 137", ListOptions{All: true, Filters: f("exited", "137")}, []string{"db"}},
		{"exited 0 skips never started", ListOptions{All: true, Filters: f("exited", "0")}, []string{"removing", "web-2"}},
		{"label key", ListOptions{All: true, Filters: f("label", "app")}, []string{"db", "web-2", "web-1", "created1"}},
		{"label value", ListOptions{All: true, Filters: f("label", "app=web")}, []string{"web-2", "web-1", "created1"}},
		{"labels all match", ListOptions{All: true, Filters: f("label", "app=web", "label", "tier=front")}, []string{"web-1"}},
		{"label running only", ListOptions{Filters: f("label", "tier")}, []string{"web-1"}},
		{"label no match", ListOptions{All: true, Filters: f("label", "app=none")}, []string{}},
		{"annotation key", ListOptions{All: true, Filters: f("annotation", "com.example.key")}, []string{"db"}},
		{"annotation value", ListOptions{All: true, Filters: f("annotation", "com.example.key=value")}, []string{"db"}},
		{"annotation other value", ListOptions{All: true, Filters: f("annotation", "com.example.key=other")}, []string{}},
		{"annotations all match", ListOptions{All: true, Filters: f("annotation", "com.example.key", "annotation", "app=y")}, []string{}},
		{"annotation is no label", ListOptions{All: true, Filters: f("annotation", "tier")}, []string{}},
		{"name is a regexp", ListOptions{All: true, Filters: f("name", "web")}, []string{"web-2", "web-1"}},
		{"name anchored", ListOptions{All: true, Filters: f("name", "^/web-1$")}, []string{"web-1"}},
		{"name with slash", ListOptions{All: true, Filters: f("name", "/db")}, []string{"db"}},
		{"names or", ListOptions{All: true, Filters: f("name", "web-2", "name", "db")}, []string{"db", "web-2"}},
		{"bad regexp matches exactly", ListOptions{All: true, Filters: f("name", "db(")}, []string{}},
		{"id prefix", ListOptions{All: true, Filters: f("id", cs["web-2"].ID[:12])}, []string{"web-2"}},
		{"id full", ListOptions{All: true, Filters: f("id", cs["db"].ID)}, []string{"db"}},
		{"id and name", ListOptions{All: true, Filters: f("id", cs["web-2"].ID, "name", "db")}, []string{}},
		{"before", ListOptions{All: true, Filters: f("before", "web-2")}, []string{"web-1", "created1"}},
		{"since", ListOptions{All: true, Filters: f("since", "db")}, []string{"removing", "gone", "paused"}},
		{"since by id", ListOptions{All: true, Filters: f("since", cs["gone"].ID[:10])}, []string{"removing"}},
		{"ancestor", ListOptions{All: true, Filters: f("ancestor", "img"), Ancestors: map[string]bool{"sha256:2222": true}}, []string{"paused"}},
		{"ancestor unresolved", ListOptions{All: true, Filters: f("ancestor", "img")}, []string{}},
		{"health none", ListOptions{Filters: f("health", "none")}, []string{"paused", "web-1"}},
		{"health healthy", ListOptions{Filters: f("health", "healthy")}, []string{}},
		{"is-task", ListOptions{All: true, Filters: f("is-task", "true")}, []string{}},
		{"not a task", ListOptions{Filters: f("is-task", "false")}, []string{"paused", "web-1"}},
		{"isolation ignored", ListOptions{Filters: f("isolation", "process")}, []string{"paused", "web-1"}},
		{"volume by destination", ListOptions{All: true, Filters: f("volume", "/data")}, []string{"web-1"}},
		{"volume by name", ListOptions{All: true, Filters: f("volume", "vol1")}, []string{"web-1"}},
		{"network by name", ListOptions{All: true, Filters: f("network", "mynet")}, []string{"web-1"}},
		{"network by id prefix", ListOptions{All: true, Filters: f("network", "abc")}, []string{"web-1"}},
		{"publish", ListOptions{All: true, Filters: f("publish", "8080")}, []string{"web-1"}},
		{"publish range", ListOptions{All: true, Filters: f("publish", "8000-8100/tcp")}, []string{"web-1"}},
		{"publish other proto", ListOptions{All: true, Filters: f("publish", "8080/udp")}, []string{}},
		{"expose", ListOptions{All: true, Filters: f("expose", "80")}, []string{"web-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.List(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, c := range got {
				names = append(names, c.Name[1:])
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Fatalf("List = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestListErrors(t *testing.T) {
	s, _ := listFixture(t)
	tests := []struct {
		name  string
		f     Filters
		class error
		msg   string
	}{
		{"unknown key", Filters{}.Add("colour", "x"), errdefs.ErrInvalidArgument, "invalid filter 'colour'"},
		{"unknown before", Filters{}.Add("before", "nope"), errdefs.ErrNotFound, "No such container: nope"},
		{"ambiguous since", Filters{}.Add("since", ""), errdefs.ErrInvalidArgument, `invalid name or ID supplied: ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.List(context.Background(), ListOptions{Filters: tt.f})
			if !errors.Is(err, tt.class) || err.Error() != tt.msg {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
}

func TestListReturnsCopies(t *testing.T) {
	s, _ := listFixture(t)
	got, _ := s.List(context.Background(), ListOptions{All: true})
	got[0].Config.Labels = map[string]string{"x": "y"}
	again, _ := s.List(context.Background(), ListOptions{All: true})
	if again[0].Config.Labels != nil {
		t.Fatal("changing a listed container changed the store")
	}
}
