package apiserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/hutch-engine/hutch/engine"
)

var fakeStat = containertypes.PathStat{Name: "passwd", Size: 5, Mode: 0o644, Mtime: time.Unix(1700000000, 0).UTC(), LinkTarget: "/x"}

func (f *fakeExec) ContainerStatPath(_ context.Context, ref, p string) (containertypes.PathStat, error) {
	if _, ok := f.files[p]; !ok {
		return containertypes.PathStat{}, errdefs.ErrNotFound.WithMessage("Could not find the file " + p + " in container " + ref)
	}
	return fakeStat, nil
}

func (f *fakeExec) ContainerArchivePath(ctx context.Context, ref, p string) (io.ReadCloser, containertypes.PathStat, error) {
	st, err := f.ContainerStatPath(ctx, ref, p)
	if err != nil {
		return nil, st, err
	}
	return io.NopCloser(strings.NewReader(f.files[p])), st, nil
}

func (f *fakeExec) ContainerExtractToDir(_ context.Context, ref string, req engine.ExtractRequest, content io.Reader) error {
	if req.Path == "/ro" {
		return errdefs.ErrInvalidArgument.WithMessage("container rootfs is marked read-only")
	}
	b, err := io.ReadAll(content)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extracted, f.body = req, string(b)
	return err
}

func TestArchive(t *testing.T) {
	f := &fakeExec{files: map[string]string{"/etc/passwd": "a tar"}}
	c, sock := serveFake(t, f)
	ctx := context.Background()

	st, err := c.ContainerStatPath(ctx, "c1", client.ContainerStatPathOptions{Path: "/etc/passwd"})
	if err != nil || st.Stat.Name != "passwd" || st.Stat.Mode != os.FileMode(0o644) || !st.Stat.Mtime.Equal(fakeStat.Mtime) || st.Stat.LinkTarget != "/x" {
		t.Errorf("ContainerStatPath = %+v, %v", st, err)
	}
	if _, err := c.ContainerStatPath(ctx, "c1", client.ContainerStatPathOptions{Path: "/nope"}); !errdefs.IsNotFound(err) {
		t.Errorf("stat of a missing file: %v", err)
	}
	res, err := c.CopyFromContainer(ctx, "c1", client.CopyFromContainerOptions{SourcePath: "/etc/passwd"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Content)
	res.Content.Close()
	if string(b) != "a tar" || res.Stat.Size != 5 {
		t.Errorf("CopyFromContainer = %q %+v", b, res.Stat)
	}
	if _, err := c.CopyFromContainer(ctx, "c1", client.CopyFromContainerOptions{SourcePath: "/nope"}); !errdefs.IsNotFound(err) {
		t.Errorf("copy of a missing file: %v", err)
	}
	for _, tc := range []struct {
		opts client.CopyToContainerOptions
		want engine.ExtractRequest
	}{
		{client.CopyToContainerOptions{DestinationPath: "/tmp", Content: strings.NewReader("tar1")},
			engine.ExtractRequest{Path: "/tmp", NoOverwriteDirNonDir: true}},
		{client.CopyToContainerOptions{DestinationPath: "/tmp/", Content: strings.NewReader("tar2"), AllowOverwriteDirWithFile: true, CopyUIDGID: true},
			engine.ExtractRequest{Path: "/tmp/", CopyUIDGID: true}},
	} {
		if _, err := c.CopyToContainer(ctx, "c1", tc.opts); err != nil {
			t.Fatal(err)
		}
		if f.extracted != tc.want || !strings.HasPrefix(f.body, "tar") {
			t.Errorf("backend got %+v %q, want %+v", f.extracted, f.body, tc.want)
		}
	}
	if _, err := c.CopyToContainer(ctx, "c1", client.CopyToContainerOptions{DestinationPath: "/ro", Content: strings.NewReader("x")}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("copy into a read-only rootfs: %v", err)
	}

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, tc := range []struct {
		method, path string
		status       int
		ct           string
	}{
		{"GET", "/containers/c1/archive?path=/etc/passwd", 200, "application/x-tar"},
		{"GET", "/containers/c1/archive", 400, "application/json"},
		{"HEAD", "/containers/c1/archive?path=", 400, "application/json"},
		{"PUT", "/containers/c1/archive", 400, "application/json"},
		{"POST", "/containers/c1/archive?path=/x", 404, "application/json"},
	} {
		req, _ := http.NewRequest(tc.method, "http://hutch/v1.41"+tc.path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != tc.ct {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.ct)
		}
	}
}
