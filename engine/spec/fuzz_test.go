package spec

import (
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
)

// Binds come straight from API clients.
func FuzzParseBind(f *testing.F) {
	for _, s := range []string{
		"/src:/dst", "/src:/dst:ro", "/a:/b:ro,Z,rshared", "vol:/dst:nocopy", "/anon",
		"", ":", "::", "/a:/", "/a:/b:c:d", "/a:rel", "/a:/b/../..", "/a:/b:ro,rw", "a\x00:/b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := ParseBind(raw)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("%q: unclassed error %v", raw, err)
			}
			return
		}
		if !path.IsAbs(m.Target) || path.Clean(m.Target) != m.Target || m.Target == "/" {
			t.Fatalf("%q: target %q", raw, m.Target)
		}
		switch m.Type {
		case mount.TypeBind:
			if !path.IsAbs(m.Source) || path.Clean(m.Source) != m.Source {
				t.Fatalf("%q: bind source %q", raw, m.Source)
			}
			again := m.Source + ":" + m.Target
			if m.ReadOnly {
				again += ":ro"
			}
			m2, err := ParseBind(again)
			if err != nil || m2.Source != m.Source || m2.Target != m.Target || m2.ReadOnly != m.ReadOnly {
				t.Fatalf("%q: re-parsing %q gave %+v, %v", raw, again, m2, err)
			}
		case mount.TypeVolume:
			if path.IsAbs(m.Source) {
				t.Fatalf("%q: volume with absolute source %q", raw, m.Source)
			}
		default:
			t.Fatalf("%q: type %q", raw, m.Type)
		}
	})
}

// User specs come from clients, passwd and group files from images.
func FuzzResolveUser(f *testing.F) {
	f.Add("app", "", testPasswd, testGroup, false)
	f.Add("1000:staff", "wheel,7", testPasswd, testGroup, false)
	f.Add("", "", "root:x:0:0::/:/bin/sh\n", "g:x:0:root\n", true)
	f.Add("x:y", "z", ":::\n::", "::::\n", false)
	f.Add("4294967296", "", "", "", false)
	f.Add("root", "", "root:x:-1:-1\n", "", true)
	f.Fuzz(func(t *testing.T, spec, groupAdd, passwd, group string, single bool) {
		var add []string
		if groupAdd != "" {
			add = strings.Split(groupAdd, ",")
		}
		u, err := resolveUser(spec, add, []byte(passwd), []byte(group), single)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("unclassed error %v", err)
			}
			return
		}
		if len(u.AdditionalGids) == 0 || u.AdditionalGids[0] != u.GID {
			t.Fatalf("gid %d, additional %v", u.GID, u.AdditionalGids)
		}
		if single && (u.UID != 0 || u.GID != 0 || !slices.Equal(u.AdditionalGids, []uint32{0})) {
			t.Fatalf("single-UID mode gave %+v", u)
		}
		if n, err := strconv.ParseUint(spec, 10, 31); err == nil && uint64(u.UID) != n {
			t.Fatalf("numeric user %q became uid %d", spec, u.UID)
		}
	})
}
