//go:build integration

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// readBuildStream reads POST /build's stream to its end: the image ID of
// the aux message, the text of the stream messages, and the error the
// stream ended with.
func readBuildStream(t *testing.T, body io.Reader) (id, stream, errMsg string) {
	t.Helper()
	dec := json.NewDecoder(body)
	var text strings.Builder
	for {
		var m struct {
			Stream string
			Error  string `json:"error"`
			Aux    *struct{ ID string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			return id, text.String(), errMsg
		} else if err != nil {
			t.Fatal(err)
		}
		text.WriteString(m.Stream)
		if m.Error != "" {
			errMsg = m.Error
		}
		if m.Aux != nil {
			id = m.Aux.ID
		}
	}
}

// gitServed makes a git repository of files (one commit on branch
// "main") and serves it over git's dumb HTTP protocol under mux, at
// /<name>.git.
func gitServed(t *testing.T, mux *http.ServeMux, name string, files map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed (apt-get install git, as contrib/test/setup-root.sh does): ", err)
	}
	work, served := buildDir(t, files), t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git(work, "init", "-q")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "context")
	git(served, "clone", "-q", "--bare", work, name+".git")
	git(filepath.Join(served, name+".git"), "update-server-info")
	mux.Handle("/"+name+".git/", http.FileServer(http.Dir(served)))
}

// TestBuildRemote: POST /build with remote= (the SDK's RemoteContext, as
// docker-py sends for a URL or git path) builds from a Dockerfile alone,
// a compressed archive, and a git repository with a ref and a
// subdirectory, all fetched by the daemon from a server on loopback.
func TestBuildRemote(t *testing.T) {
	d, ref := pulled(t)
	api := d.Client(t)
	ctx := context.Background()

	var ctxTar bytes.Buffer
	zw := gzip.NewWriter(&ctxTar)
	tw := tar.NewWriter(zw)
	for name, content := range map[string]string{
		"Dockerfile": "FROM " + ref + "\nCOPY f /f\n",
		"f":          "from the archive",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
		tw.Write([]byte(content))
	}
	tw.Close()
	zw.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/Dockerfile", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "FROM "+ref+"\nRUN echo from the Dockerfile > /f\n")
	})
	mux.HandleFunc("/ctx.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(ctxTar.Bytes())
	})
	gitServed(t, mux, "repo", map[string]string{
		"Dockerfile":         "FROM scratch\n",
		"app/Dockerfile":     "FROM " + ref + "\nCOPY . /app\n",
		"app/f":              "from git",
		"app/.dockerignore":  "ignored\n",
		"app/ignored":        "not sent",
		"other/not-included": "x",
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, tc := range []struct{ remote, tag, file, want string }{
		{srv.URL + "/Dockerfile", "remote/df", "/f", "from the Dockerfile\n"},
		{srv.URL + "/ctx.tar.gz", "remote/tar", "/f", "from the archive"},
		{srv.URL + "/repo.git#main:app", "remote/git", "/app/f", "from git"},
	} {
		res, err := api.ImageBuild(ctx, nil, client.ImageBuildOptions{RemoteContext: tc.remote, Tags: []string{tc.tag}, Remove: true})
		if err != nil {
			t.Fatalf("build of %s: %v\n%s", tc.remote, err, d.Log())
		}
		id, _, errMsg := readBuildStream(t, res.Body)
		res.Body.Close()
		if errMsg != "" || id == "" {
			t.Fatalf("build of %s: id %q, error %q", tc.remote, id, errMsg)
		}
		out, err := d.Docker(t, "run", "--rm", tc.tag, "cat", tc.file)
		if err != nil || out != tc.want {
			t.Errorf("%s: %s = %q, %v; want %q", tc.remote, tc.file, out, err, tc.want)
		}
	}
	// The git context is the subdirectory, .dockerignore applied.
	if out, err := d.Docker(t, "run", "--rm", "remote/git", "ls", "-a", "/app"); err != nil || strings.Join(strings.Fields(out), " ") != ". .. .dockerignore Dockerfile f" {
		t.Errorf("/app of the git build: %q, %v", out, err)
	}

	// Failures are Docker's errors, before any step, and build nothing.
	for _, tc := range []struct {
		remote string
		class  func(error) bool
		msg    string
	}{
		{srv.URL + "/missing", errdefs.IsNotFound, "error downloading remote context " + srv.URL + "/missing: failed to GET " + srv.URL + "/missing with status 404 Not Found"},
		{srv.URL + "/repo.git#main:nowhere", errdefs.IsInvalidArgument, "error setting git context, not a directory: nowhere"},
		{srv.URL + "/repo.git#-x", errdefs.IsInvalidArgument, "invalid refspec: -x"},
		{"ftp://127.0.0.1/ctx.tar", errdefs.IsInvalidArgument, "remoteURL (ftp://127.0.0.1/ctx.tar) could not be recognized as URL"},
	} {
		_, err := api.ImageBuild(ctx, nil, client.ImageBuildOptions{RemoteContext: tc.remote, Tags: []string{"remote/failed"}})
		if err == nil || !tc.class(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("build of %s: %v, want %q of its class", tc.remote, err, tc.msg)
		}
	}
	if out, err := d.Docker(t, "image", "inspect", "remote/failed"); err == nil {
		t.Errorf("a failed remote build tagged an image:\n%s", out)
	}
	if ents, err := os.ReadDir(filepath.Join(d.Data, "hutch", "build")); err != nil || len(ents) != 0 {
		t.Errorf("the build directory holds %d entries (%v): checkouts or contexts left behind", len(ents), err)
	}
}
