package images

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

const (
	provenance = "https://slsa.dev/provenance/v0.2"
	sbom       = "https://spdx.dev/Document"
)

// attestedIndex is a multi-platform image of the host's platform (two
// statements and a layer without a predicate type), linux/s390x (one
// statement, whose body the store does not keep) and linux/ppc64le
// (none), as the fake store keeps it.
func attestedIndex(t *testing.T) (*imagestoretest.Fake, map[string]digest.Digest) {
	t.Helper()
	blobs := map[digest.Digest][]byte{}
	put := func(mt string, v any) ocispec.Descriptor {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		d := digest.FromBytes(b)
		blobs[d] = b
		return ocispec.Descriptor{MediaType: mt, Digest: d, Size: int64(len(b))}
	}
	statement := func(pt string) ocispec.Descriptor {
		d := put("application/vnd.in-toto+json", map[string]string{"predicateType": pt})
		d.Annotations = map[string]string{predicateTypeKey: pt}
		return d
	}
	platformManifest := func(p ocispec.Platform) ocispec.Descriptor {
		d := put(ocispec.MediaTypeImageManifest, map[string]any{"config": p})
		d.Platform = &p
		return d
	}
	attestation := func(of ocispec.Descriptor, layers ...ocispec.Descriptor) ocispec.Descriptor {
		d := put(ocispec.MediaTypeImageManifest, ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Layers: layers})
		d.Annotations = map[string]string{refTypeKey: attestationRefType, refDigestKey: of.Digest.String()}
		d.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
		return d
	}
	host := platformManifest(platforms.Normalize(platforms.DefaultSpec()))
	s390x := platformManifest(ocispec.Platform{OS: "linux", Architecture: "s390x"})
	ppc := platformManifest(ocispec.Platform{OS: "linux", Architecture: "ppc64le"})
	unannotated := put("application/octet-stream", "x")
	lost := put("application/vnd.in-toto+json", map[string]any{"predicateType": provenance, "lost": true})
	lost.Annotations = map[string]string{predicateTypeKey: provenance}
	delete(blobs, lost.Digest)
	idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{
		host, s390x, ppc,
		attestation(host, statement(provenance), unannotated, statement(sbom)),
		attestation(s390x, lost),
	}}
	index := put(ocispec.MediaTypeImageIndex, idx)
	multi := &imagestore.Image{ID: index.Digest.String(), Descriptor: &index, Refs: []string{"docker.io/library/multi:latest"},
		Platforms: []imagestore.PlatformImage{{Descriptor: host, Available: true}}}

	idx.MediaType = "application/vnd.docker.distribution.manifest.list.v2+json"
	list := put(idx.MediaType, idx)
	listImg := &imagestore.Image{ID: list.Digest.String(), Descriptor: &list, Refs: []string{"docker.io/library/list:latest"},
		Platforms: multi.Platforms}
	single := imagestoretest.Image(1, "docker.io/library/single:latest")
	store := imagestoretest.New(multi, listImg, single)
	store.Blobs = map[string]map[digest.Digest][]byte{multi.ID: blobs, listImg.ID: blobs}
	return store, map[string]digest.Digest{"lost": lost.Digest}
}

func TestImageAttestations(t *testing.T) {
	store, ds := attestedIndex(t)
	s := New(Options{Store: store})
	s390x := &ocispec.Platform{OS: "linux", Architecture: "s390x"}
	tests := []struct {
		name    string
		ref     string
		req     AttestationRequest
		types   []string // predicate types answered, in order
		bodies  bool
		isErr   func(error) bool
		message string
	}{
		{name: "host's platform", ref: "multi", types: []string{provenance, sbom}},
		{name: "with statements", ref: "multi", req: AttestationRequest{Statement: true}, types: []string{provenance, sbom}, bodies: true},
		{name: "one type", ref: "multi", req: AttestationRequest{PredicateTypes: []string{sbom}}, types: []string{sbom}},
		{name: "two types", ref: "multi", req: AttestationRequest{PredicateTypes: []string{sbom, provenance}}, types: []string{provenance, sbom}},
		{name: "a type it lacks", ref: "multi", req: AttestationRequest{PredicateTypes: []string{"x"}}},
		{name: "explicit host platform", ref: "multi", req: AttestationRequest{Platform: &ocispec.Platform{OS: "linux", Architecture: platforms.DefaultSpec().Architecture}},
			types: []string{provenance, sbom}},
		{name: "another platform", ref: "multi", req: AttestationRequest{Platform: s390x}, types: []string{provenance}},
		{name: "a statement not kept", ref: "multi", req: AttestationRequest{Platform: s390x, Statement: true}, isErr: errdefs.IsNotFound,
			message: "attestation statement " + ds["lost"].String() + " is not available locally: content digest " + ds["lost"].String() + ": not found"},
		{name: "a platform without attestations", ref: "multi", req: AttestationRequest{Platform: &ocispec.Platform{OS: "linux", Architecture: "ppc64le"}}},
		{name: "a platform it lacks", ref: "multi", req: AttestationRequest{Platform: &ocispec.Platform{OS: "linux", Architecture: "riscv64"}}, isErr: errdefs.IsNotFound,
			message: "resolving image manifest for platform &{Architecture:riscv64 OS:linux OSVersion: OSFeatures:[] Variant:}: no manifest for platform linux/riscv64: not found"},
		{name: "a Docker manifest list", ref: "list"},
		{name: "an image of one manifest", ref: "single"},
		{name: "a missing image", ref: "nope", isErr: errdefs.IsNotFound, message: "No such image: nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ImageAttestations(context.Background(), tc.ref, tc.req)
			if tc.isErr != nil {
				if err == nil || !tc.isErr(err) || err.Error() != tc.message {
					t.Fatalf("error %v, want %q of its class", err, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, st := range got {
				types = append(types, st.PredicateType)
				if st.Descriptor.Digest == "" || st.Descriptor.MediaType == "" || st.Descriptor.Annotations[predicateTypeKey] != st.PredicateType {
					t.Errorf("descriptor %+v", st.Descriptor)
				}
				if tc.bodies != (st.Statement != nil) {
					t.Fatalf("statement %v, want a body: %v", st.Statement, tc.bodies)
				}
				if tc.bodies && digest.FromBytes(*st.Statement) != st.Descriptor.Digest {
					t.Errorf("statement %s is not the blob %s", *st.Statement, st.Descriptor.Digest)
				}
			}
			if !slices.Equal(types, tc.types) {
				t.Errorf("predicate types %v, want %v", types, tc.types)
			}
		})
	}
}
