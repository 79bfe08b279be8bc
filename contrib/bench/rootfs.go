package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutch-engine/hutch/storage/testimage"
)

// writeBusyboxRootfs writes the files of the busybox test image to dir,
// owned by the user whatever the layer says: the runc baseline runs with a
// single-uid mapping, in which the user is root.
func writeBusyboxRootfs(dir string) error {
	img, err := testimage.Busybox()
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	if err := testimage.LayerFile(img, 0, &layer); err != nil {
		return err
	}
	zr, err := gzip.NewReader(&layer)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if name == "." || strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("busybox layer: bad name %q", h.Name)
		}
		p := filepath.Join(dir, name)
		mode := os.FileMode(h.Mode) & os.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(p, mode|0o700); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("busybox layer: unexpected entry %q of type %c", h.Name, h.Typeflag)
		}
	}
}

// editSpec makes runc's generated spec run args without a terminal. It
// edits the JSON generically: runc writes the spec version it knows, which
// a round trip through newer types could change.
func editSpec(path string, args []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	proc, ok := spec["process"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: no process", path)
	}
	proc["terminal"] = false
	proc["args"] = args
	if b, err = json.MarshalIndent(spec, "", "\t"); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
