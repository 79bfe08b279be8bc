package storage

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

// IndexBlob returns blob d that multi-platform image id keeps: its index
// (d is then the image's ID), or an attestation manifest or statement
// the index names, kept when the image was loaded. A blob the image does
// not keep, and any blob of an image of one manifest, is
// errdefs.ErrNotFound; an unknown image is Docker's "No such image".
func (s *Store) IndexBlob(ctx context.Context, id string, d digest.Digest) ([]byte, error) {
	img, err := s.byID(id)
	if err != nil {
		return nil, err
	}
	key := blobKey(d)
	if isIndex(img) && d.Encoded() == img.ID {
		key = indexKey
	}
	if _, ok := img.BigDataDigests[key]; !ok {
		return nil, fmt.Errorf("content digest %s: %w", d, errdefs.ErrNotFound)
	}
	b, err := s.cs.ImageBigData(img.ID, key)
	if err != nil {
		return nil, fmt.Errorf("storage: blob %s of image %s: %w", d, id, classify(err))
	}
	if digest.FromBytes(b) != d {
		return nil, fmt.Errorf("storage: blob %s of image %s does not match its digest", d, id)
	}
	return b, nil
}
