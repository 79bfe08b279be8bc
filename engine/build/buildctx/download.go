package buildctx

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// download is a file ADD fetched.
type download struct {
	file  *os.File  // unlinked, positioned at the start
	name  string    // the file's name from the URL, "" if it has none
	mtime time.Time // Last-Modified, else the time of the download
}

// download fetches raw into an unlinked file of the engine's hidden
// directory.
func (c *Context) download(ctx context.Context, cmd, raw string) (*download, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, userErrorf("%s failed: %v", cmd, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, userErrorf("%s failed: %v", cmd, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, userErrorf("%s failed: %v", cmd, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return nil, userErrorf("%s failed: failed to GET %s with status %s", cmd, raw, resp.Status)
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, c.priv), "download-")
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", raw, err)
	}
	os.Remove(f.Name())
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, userErrorf("%s failed: downloading %s: %v", cmd, raw, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("downloading %s: %w", raw, err)
	}
	d := &download{file: f, name: urlFileName(u.Path, resp.Header), mtime: time.Now()}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		d.mtime = t
	}
	return d, nil
}

// urlFileName is the last element of the URL's path or, when the path
// names no file, the filename of the Content-Disposition header.
func urlFileName(p string, h http.Header) string {
	if name := safeName(path.Base(p)); !strings.HasSuffix(p, "/") && name != "" {
		return name
	}
	if _, params, err := mime.ParseMediaType(h.Get("Content-Disposition")); err == nil {
		return safeName(path.Base(params["filename"]))
	}
	return ""
}

// safeName is name if it names a file in a directory, else "".
func safeName(name string) string {
	switch name {
	case "", ".", "..", "/":
		return ""
	}
	return name
}
