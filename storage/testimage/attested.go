package testimage

import (
	"archive/tar"
	"encoding/json"
	"io"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Statement is an in-toto statement to attach to an image: its predicate
// type and the statement's JSON.
type Statement struct {
	PredicateType string
	Body          []byte
}

// Attested are the digests of what AttestedLayout wrote.
type Attested struct {
	Index       digest.Digest   // the image index: the loaded image's ID
	Manifest    digest.Digest   // img's manifest
	Attestation digest.Digest   // the attestation manifest
	Statements  []digest.Digest // its layers, in order
}

// AttestedLayout writes to w the tar of an OCI image layout as BuildKit
// exports an image with attestations: index.json names (name, as
// io.containerd.image.name) an image index of img, under the platform
// its config names, and of an attestation manifest for it, annotated as
// BuildKit annotates one, whose layers are the statements.
func AttestedLayout(w io.Writer, name string, img v1.Image, stmts ...Statement) (Attested, error) {
	var out Attested
	blobs := map[digest.Digest][]byte{}
	put := func(mt string, b []byte) ocispec.Descriptor {
		d := digest.FromBytes(b)
		blobs[d] = b
		return ocispec.Descriptor{MediaType: mt, Digest: d, Size: int64(len(b))}
	}
	putJSON := func(mt string, v any) (ocispec.Descriptor, error) {
		b, err := json.Marshal(v)
		return put(mt, b), err
	}
	man, err := img.RawManifest()
	if err != nil {
		return out, err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return out, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return out, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return out, err
	}
	layers, err := img.Layers()
	if err != nil {
		return out, err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return out, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return out, err
		}
		put("", b)
	}
	put("", cfg)
	platform := put(string(mt), man)
	platform.Platform = &ocispec.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	out.Manifest = platform.Digest

	var statements []ocispec.Descriptor
	for _, s := range stmts {
		d := put("application/vnd.in-toto+json", s.Body)
		d.Annotations = map[string]string{"in-toto.io/predicate-type": s.PredicateType}
		statements = append(statements, d)
		out.Statements = append(out.Statements, d.Digest)
	}
	attCfg, err := putJSON(ocispec.MediaTypeImageConfig, map[string]any{})
	if err != nil {
		return out, err
	}
	att, err := putJSON(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned: versioned, MediaType: ocispec.MediaTypeImageManifest, Config: attCfg, Layers: statements,
	})
	if err != nil {
		return out, err
	}
	att.Annotations = map[string]string{
		"vnd.docker.reference.type":   "attestation-manifest",
		"vnd.docker.reference.digest": platform.Digest.String(),
	}
	att.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
	out.Attestation = att.Digest

	idx, err := putJSON(ocispec.MediaTypeImageIndex, ocispec.Index{
		Versioned: versioned, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{platform, att},
	})
	if err != nil {
		return out, err
	}
	idx.Annotations = map[string]string{"io.containerd.image.name": name}
	out.Index = idx.Digest
	top, err := json.Marshal(ocispec.Index{Versioned: versioned, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{idx}})
	if err != nil {
		return out, err
	}
	return out, writeLayout(w, top, blobs)
}

var versioned = specs.Versioned{SchemaVersion: 2}

// writeLayout writes the OCI layout of index.json top and blobs as a tar.
func writeLayout(w io.Writer, top []byte, blobs map[digest.Digest][]byte) error {
	tw := tar.NewWriter(w)
	file := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: Epoch}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", top); err != nil {
		return err
	}
	names := make([]digest.Digest, 0, len(blobs))
	for d := range blobs {
		names = append(names, d)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, d := range names {
		if err := file("blobs/sha256/"+d.Encoded(), blobs[d]); err != nil {
			return err
		}
	}
	return tw.Close()
}
