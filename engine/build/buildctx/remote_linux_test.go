package buildctx

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestIsGitURL(t *testing.T) {
	for remote, want := range map[string]bool{
		"https://example.com/a/b.git":            true,
		"http://127.0.0.1:8080/repo.git#main:d":  true,
		"git://example.com/repo":                 true,
		"git@example.com:a/b":                    true,
		"github.com/a/b":                         true,
		"https://example.com/ctx.tar.gz":         false,
		"https://example.com/a.git/Dockerfile":   false,
		"http://example.com/repo.gitx":           false,
		"ftp://example.com/repo.git":             false,
		"example.com/repo.git":                   false,
		"https://example.com/repo.git#":          false,
		"https://example.com/repo.git#v1.0:sub/": true,
	} {
		if got := IsGitURL(remote); got != want {
			t.Errorf("IsGitURL(%q) = %v, want %v", remote, got, want)
		}
	}
}

func TestParseGitRemote(t *testing.T) {
	for _, tc := range []struct {
		in                string
		repo, ref, subdir string
		bad               string
	}{
		{in: "https://h/r.git", repo: "https://h/r.git"},
		{in: "https://h/r.git#v1", repo: "https://h/r.git", ref: "v1"},
		{in: "https://h/r.git#:sub/dir", repo: "https://h/r.git", subdir: "sub/dir"},
		{in: "https://h/r.git#pull/42/head:d", repo: "https://h/r.git", ref: "pull/42/head", subdir: "d"},
		{in: "github.com/o/r", repo: "https://github.com/o/r"},
		{in: "git@h:o/r.git#b:s", repo: "git@h:o/r.git", ref: "b", subdir: "s"},
		{in: "git://h/r#b", repo: "git://h/r", ref: "b"},
		{in: "https://h/r.git#-upload-pack=x", bad: "invalid refspec: -upload-pack=x"},
	} {
		g, err := parseGitRemote(tc.in)
		if tc.bad != "" {
			if !errdefs.IsInvalidArgument(err) || err.Error() != tc.bad {
				t.Errorf("parseGitRemote(%q) = %v, want %q", tc.in, err, tc.bad)
			}
			continue
		}
		if err != nil || g.repo != tc.repo || g.ref != tc.ref || g.subdir != tc.subdir {
			t.Errorf("parseGitRemote(%q) = %+v, %v; want %s %s %s", tc.in, g, err, tc.repo, tc.ref, tc.subdir)
		}
	}
}

// extractRemote extracts what Remote returns for remote.
func extractRemote(t *testing.T, remote, dockerfile string) (*Context, error) {
	t.Helper()
	rc, err := Remote(context.Background(), remote, dockerfile, t.TempDir())
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading the context of %s: %v", remote, err)
	}
	return extractTest(t, b), nil
}

func TestRemoteURL(t *testing.T) {
	ctxTar := mkTar(t, ent{name: "Dockerfile", body: "FROM scratch\nCOPY f /\n"}, ent{name: "f", body: "from the archive"})
	mux := http.NewServeMux()
	serve := func(p, ct string, body []byte, status int) {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{ct} // "" stays empty
			w.WriteHeader(status)
			w.Write(body)
		})
	}
	serve("/Dockerfile", "text/plain; charset=utf-8", []byte("FROM busybox\nRUN true\n"), 200)
	serve("/noext", "application/octet-stream", []byte("FROM busybox\n"), 200)
	serve("/ctx.tar.gz", "application/gzip", gzipped(t, ctxTar), 200)
	serve("/ctx.tar", "", ctxTar, 200)
	serve("/page", "text/html", []byte("<html></html>"), 200)
	serve("/empty", "application/x-tar", nil, 200)
	serve("/missing", "text/plain", []byte("no such file\n"), 404)
	serve("/secret", "text/plain", []byte("go away"), 403)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c, err := extractRemote(t, srv.URL+"/Dockerfile", "")
	if err != nil {
		t.Fatal(err)
	}
	if df, err := c.Dockerfile(""); err != nil || string(df) != "FROM busybox\nRUN true\n" {
		t.Errorf("a Dockerfile alone: %q, %v", df, err)
	}
	// A Dockerfile alone is the file the request names.
	c, err = extractRemote(t, srv.URL+"/noext", "sub/Build.df")
	if err != nil {
		t.Fatal(err)
	}
	if df, err := c.Dockerfile("sub/Build.df"); err != nil || string(df) != "FROM busybox\n" {
		t.Errorf("a Dockerfile as octet-stream: %q, %v", df, err)
	}
	for _, p := range []string{"/ctx.tar.gz", "/ctx.tar"} {
		c, err := extractRemote(t, srv.URL+p, "")
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b, err := os.ReadFile(filepath.Join(c.Dir(), "f")); err != nil || string(b) != "from the archive" {
			t.Errorf("%s: f = %q, %v", p, b, err)
		}
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String() + "/ctx.tar"
	closed.Close()
	for _, tc := range []struct {
		remote string
		class  func(error) bool
		msg    string
	}{
		{srv.URL + "/page", errdefs.IsInvalidArgument, `error detecting content type for remote ` + srv.URL + `/page: unsupported Content-Type "text/html"`},
		{srv.URL + "/empty", errdefs.IsInvalidArgument, "empty response"},
		{srv.URL + "/missing", errdefs.IsNotFound, "error downloading remote context " + srv.URL + "/missing: failed to GET " + srv.URL + "/missing with status 404 Not Found: no such file"},
		{srv.URL + "/secret", errdefs.IsPermissionDenied, "with status 403 Forbidden: go away"},
		{unreachable, errdefs.IsUnknown, "connection refused"},
		{"ftp://example.com/ctx.tar", errdefs.IsInvalidArgument, "remoteURL (ftp://example.com/ctx.tar) could not be recognized as URL"},
		{ClientSession, errdefs.IsInvalidArgument, "use builder version v2 (BuildKit)"},
	} {
		_, err := Remote(context.Background(), tc.remote, "", t.TempDir())
		if err == nil || !tc.class(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Remote(%s) = %v, want %q of its class", tc.remote, err, tc.msg)
		}
	}
}

// gitRepoServer makes a repository (a branch "trunk" with a tag and a
// subdirectory, and a branch "other") and serves it over git's dumb HTTP
// protocol at <URL>/repo.git, which cannot serve shallow fetches.
func gitRepoServer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed (apt-get install git): ", err)
	}
	work, served := t.TempDir(), t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=trunk"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(work, "init", "-q")
	write("Dockerfile", "FROM busybox\nCOPY . /ctx\n")
	write("sub/Dockerfile", "FROM busybox\n")
	write("sub/only-in-sub", "sub")
	if err := os.Symlink("/etc/passwd", filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "one")
	git(work, "tag", "v1")
	write("later", "second commit")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "two")
	git(work, "checkout", "-q", "-b", "other")
	write("on-other", "other")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "three")
	git(work, "checkout", "-q", "trunk")
	git(served, "clone", "-q", "--bare", work, "repo.git")
	git(filepath.Join(served, "repo.git"), "update-server-info")
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	t.Cleanup(srv.Close)
	return srv.URL + "/repo.git"
}

func TestRemoteGit(t *testing.T) {
	repo := gitRepoServer(t)
	exists := func(c *Context, name string) bool {
		_, err := os.Lstat(filepath.Join(c.Dir(), name))
		return err == nil
	}
	for _, tc := range []struct {
		fragment      string
		want, notWant []string
	}{
		{"", []string{"Dockerfile", "later", "sub/only-in-sub", ".git"}, []string{"on-other"}},
		{"#v1", []string{"Dockerfile"}, []string{"later"}},
		{"#other", []string{"on-other", "later"}, nil},
		{"#trunk:sub", []string{"only-in-sub", "Dockerfile"}, []string{"later", "sub"}},
		{"#:sub", []string{"only-in-sub"}, nil},
	} {
		c, err := extractRemote(t, repo+tc.fragment, "")
		if err != nil {
			t.Errorf("%s: %v", tc.fragment, err)
			continue
		}
		for _, n := range tc.want {
			if !exists(c, n) {
				t.Errorf("%s: %s missing", tc.fragment, n)
			}
		}
		for _, n := range tc.notWant {
			if exists(c, n) {
				t.Errorf("%s: %s should not be there", tc.fragment, n)
			}
		}
	}
	// The symlink is a link in the context, never the file it names.
	c, err := extractRemote(t, repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(c.Dir(), "escape")); err != nil || l != "/etc/passwd" {
		t.Errorf("symlink: %q %v", l, err)
	}
	for _, tc := range []struct {
		fragment string
		class    func(error) bool
		msg      string
	}{
		{"#:missing", errdefs.IsInvalidArgument, "error setting git context, not a directory: missing"},
		{"#:Dockerfile", errdefs.IsInvalidArgument, "not a directory: Dockerfile"},
		{"#:../..", errdefs.IsInvalidArgument, `"../.." not within git root`},
		{"#:escape", errdefs.IsInvalidArgument, `"escape" not within git root`},
		{"#no-such-branch", func(error) bool { return true }, "error fetching"},
	} {
		_, err := Remote(context.Background(), repo+tc.fragment, "", t.TempDir())
		if err == nil || !tc.class(err) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.fragment, err, tc.msg)
		}
	}
	// A failed checkout leaves nothing in the scratch directory.
	scratch := t.TempDir()
	if _, err := Remote(context.Background(), repo+"#:missing", "", scratch); err == nil {
		t.Fatal("no error")
	}
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch holds %d entries after a failure", len(ents))
	}
	// Closing the archive removes the checkout.
	rc, err := Remote(context.Background(), repo, "", scratch)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rc)
	rc.Close()
	if ents, _ := os.ReadDir(scratch); len(ents) != 0 {
		t.Errorf("scratch holds %d entries after Close", len(ents))
	}
}

// FuzzParseGitRemote: whatever the remote, what reaches git's command
// line as the repository or the ref is never taken for an option, and
// the repository keeps no fragment.
func FuzzParseGitRemote(f *testing.F) {
	for _, s := range []string{"https://h/r.git#main:sub", "git@h:r#-x", "github.com/o/r", "git://h/r#:d", "-x.git", "https://h/r.git##:", "ssh://-oProxyCommand=x/r.git"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, remote string) {
		g, err := parseGitRemote(remote)
		if err != nil {
			return
		}
		if strings.HasPrefix(g.repo, "-") || strings.HasPrefix(g.ref, "-") {
			t.Fatalf("%q: repo %q ref %q start with '-'", remote, g.repo, g.ref)
		}
		if !strings.HasPrefix(g.repo, "git@") && strings.Contains(g.repo, "#") {
			t.Fatalf("%q: repo %q keeps a fragment", remote, g.repo)
		}
	})
}
