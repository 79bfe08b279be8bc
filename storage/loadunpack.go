package storage

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Docker's containerd image store loads an archive's content first and
// unpacks the host's platform after: content that is whole but does not
// unpack (a layer that is no tar, a config that is no JSON) leaves the
// image loaded, with an "Error unpacking image" line. hutch stores a
// platform by unpacking it, so a platform of an index that fails so is
// left out and the index image is stored all the same; content the
// archive lacks or holds corrupt stays an error of the load.

// unpackOnly reports whether err, instance d's failure to be stored, is
// one of unpacking only: the archive's fault (not the machine's, not a
// cancel), with every blob of d present and matching its digest.
func (l *layoutLoad) unpackOnly(err error, d digest.Digest) bool {
	if !errors.Is(err, errdefs.ErrInvalidArgument) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || machineError(err) {
		return false
	}
	mb, err := l.blob(d)
	if err != nil {
		return false
	}
	var man ocispec.Manifest
	if json.Unmarshal(mb, &man) != nil {
		return false
	}
	for _, b := range append([]ocispec.Descriptor{man.Config}, man.Layers...) {
		if !l.intact(b.Digest) {
			return false
		}
	}
	return true
}

// intact reports whether the layout holds blob d, matching its digest;
// the blob is streamed, as a layer may be large.
func (l *layoutLoad) intact(d digest.Digest) bool {
	if d.Validate() != nil {
		return false
	}
	f, err := os.Open(filepath.Join(l.dir, "blobs", d.Algorithm().String(), d.Encoded()))
	if err != nil {
		return false
	}
	defer f.Close()
	v := d.Verifier()
	if _, err := io.Copy(v, f); err != nil {
		return false
	}
	return v.Verified()
}
