package images

import (
	"context"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// anyBlobStore keeps an index, and answers every other blob with blob:
// the fuzzer cannot make digests match, so whatever the index names is
// found.
type anyBlobStore struct {
	*imagestoretest.Fake
	index, blob []byte
}

func (s *anyBlobStore) IndexBlob(_ context.Context, _ string, d digest.Digest) ([]byte, error) {
	if d == digest.FromBytes(s.index) {
		return s.index, nil
	}
	if s.blob == nil {
		return nil, errdefs.ErrNotFound
	}
	return s.blob, nil
}

// FuzzImageAttestations: any index and attestation manifest a loaded
// archive held are read without a panic; what is answered has a
// predicate type, and the body asked for.
func FuzzImageAttestations(f *testing.F) {
	f.Add([]byte(`{"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","platform":{"os":"linux","architecture":"amd64"}},`+
		`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bb","annotations":{"vnd.docker.reference.type":"attestation-manifest","vnd.docker.reference.digest":"sha256:aa"}}]}`),
		[]byte(`{"layers":[{"mediaType":"application/vnd.in-toto+json","digest":"sha256:cc","annotations":{"in-toto.io/predicate-type":"p"}}]}`), "amd64", true)
	f.Add([]byte(`{"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa"}]}`), []byte(`{`), "arm64", false)
	f.Add([]byte(`[]`), []byte(nil), "", false)
	f.Fuzz(func(t *testing.T, index, blob []byte, arch string, statement bool) {
		d := digest.FromBytes(index)
		img := &imagestore.Image{ID: d.String(), Descriptor: &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: d}}
		s := New(Options{Store: &anyBlobStore{Fake: imagestoretest.New(img), index: index, blob: blob}})
		req := AttestationRequest{Statement: statement}
		if arch != "" {
			req.Platform = &ocispec.Platform{OS: "linux", Architecture: arch}
		}
		out, err := s.ImageAttestations(context.Background(), img.ID, req)
		if err != nil {
			if out != nil {
				t.Fatalf("answer %v with error %v", out, err)
			}
			return
		}
		for _, st := range out {
			if st.PredicateType == "" || (st.Statement != nil) != statement {
				t.Fatalf("statement %+v", st)
			}
		}
	})
}
