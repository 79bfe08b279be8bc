package buildctx

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestTarURL(t *testing.T) {
	lastMod := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/files/hello.txt":
			w.Header().Set("Last-Modified", lastMod.Format(http.TimeFormat))
			w.Write([]byte("hello"))
		case "/disposition/":
			w.Header().Set("Content-Disposition", `attachment; filename="from-header.bin"`)
			w.Write([]byte("h"))
		case "/anonymous/":
			w.Write([]byte("a"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c := extractTest(t, mkTar(t, ent{name: "a.txt", body: "A"}))
	stat := fakeStat(nil, []string{"/", "/opt"})
	cases := map[string]struct {
		src, dest string
		names     []string
	}{
		"into-dir":    {"/files/hello.txt", "/dl/", []string{"dl/", "dl/hello.txt"}},
		"as-dest":     {"/files/hello.txt", "/dl/named", []string{"dl/", "dl/named"}},
		"existing":    {"/files/hello.txt", "/opt", []string{"opt/hello.txt"}},
		"disposition": {"/disposition/", "/opt/", []string{"opt/from-header.bin"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := CopySpec{Sources: []string{srv.URL + tc.src}, Dest: tc.dest, UID: 7, GID: 8, Extract: true, AllowURL: true}
			m, names, _ := runTar(t, c, spec, stat)
			if !slices.Equal(names, tc.names) {
				t.Fatalf("entries %v, want %v", names, tc.names)
			}
			f := m[tc.names[len(tc.names)-1]]
			if f.mode != 0o600 || f.uid != 7 || f.gid != 8 {
				t.Errorf("file %+v", f)
			}
			if tc.src == "/files/hello.txt" && (f.body != "hello" || !f.mtime.Equal(lastMod)) {
				t.Errorf("body %q, mtime %v", f.body, f.mtime)
			}
		})
	}
	spec := CopySpec{Sources: []string{srv.URL + "/files/hello.txt", "a.txt"}, Dest: "/both/", Extract: true, AllowURL: true}
	if _, names, _ := runTar(t, c, spec, stat); !slices.Equal(names, []string{"both/", "both/hello.txt", "both/a.txt"}) {
		t.Errorf("URL and file: %v", names)
	}

	errCases := map[string]CopySpec{
		"404":       {Sources: []string{srv.URL + "/nope"}, Dest: "/opt/", AllowURL: true},
		"no-name":   {Sources: []string{srv.URL + "/anonymous/"}, Dest: "/opt/", AllowURL: true},
		"not-add":   {Sources: []string{srv.URL + "/files/hello.txt"}, Dest: "/opt/"},
		"bad-host":  {Sources: []string{"http://127.0.0.1:1/x"}, Dest: "/opt/", AllowURL: true},
		"bad-other": {Sources: []string{"https://[::1"}, Dest: "/opt/", AllowURL: true},
	}
	for name, spec := range errCases {
		t.Run(name, func(t *testing.T) {
			_, err := c.Tar(t.Context(), spec, stat, &bytes.Buffer{})
			wantUserError(t, err, "")
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	spec = CopySpec{Sources: []string{srv.URL + "/files/hello.txt"}, Dest: "/opt/", AllowURL: true}
	if _, err := c.Tar(ctx, spec, stat, &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
