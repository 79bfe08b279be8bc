package buildkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"strings"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	"github.com/moby/buildkit/cache"
	cacheconfig "github.com/moby/buildkit/cache/config"
	bkexporter "github.com/moby/buildkit/exporter"
	"github.com/moby/buildkit/exporter/containerimage"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/util/progress"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// mobyExporter is the exporter buildx's docker driver asks for: the
// image goes into the daemon's own store.
const mobyExporter = "moby"

// exporter is "moby": BuildKit's image exporter commits the image into
// the content store (and pushes it when asked), then the image is loaded
// into the engine, or only tagged when the engine has that image id.
type exporter struct {
	inner bkexporter.Exporter
	eng   *engineClient
	cs    content.Store
}

func (e *exporter) Resolve(ctx context.Context, id int, opts map[string]string) (bkexporter.ExporterInstance, error) {
	inner := maps.Clone(opts)
	if inner == nil {
		inner = map[string]string{}
	}
	// The engine's image id is the config's digest whatever is asked
	// (Docker's graph-driver store does the same).
	delete(inner, "prefer-image-digest")
	inner[string(exptypes.OptKeyStore)] = "false"
	// Layers only for the engine are not compressed to be read back at
	// once; a push keeps BuildKit's default.
	if _, ok := inner["compression"]; !ok && !truthy(inner[string(exptypes.OptKeyPush)]) {
		inner["compression"] = "uncompressed"
	}
	i, err := e.inner.Resolve(ctx, id, inner)
	if err != nil {
		return nil, err
	}
	// The layers' configuration the image exporter commits with, to
	// ask the refs for the same blobs (unlazy).
	var commit containerimage.ImageCommitOpts
	if _, err := commit.Load(ctx, inner); err != nil {
		return nil, err
	}
	return &exporterInstance{ExporterInstance: i, e: e, refCfg: commit.RefCfg}, nil
}

func truthy(v string) bool {
	return v == "true" || v == "1"
}

type exporterInstance struct {
	bkexporter.ExporterInstance
	e      *exporter
	refCfg cacheconfig.RefConfig
}

func (i *exporterInstance) Type() string { return mobyExporter }

func (i *exporterInstance) Export(ctx context.Context, src *bkexporter.Source, info bkexporter.ExportBuildInfo) (map[string]string, bkexporter.FinalizeFunc, bkexporter.DescriptorReference, error) {
	resp, finalize, ref, err := i.ExporterInstance.Export(ctx, src, info)
	if err != nil {
		return nil, nil, nil, err
	}
	release := func() {
		if ref != nil {
			_ = ref.Release()
		}
	}
	top, err := responseDescriptor(resp)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	man, err := i.e.platformManifest(ctx, top)
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	names := tagNames(resp[exptypes.ExporterImageNameKey])
	fetch := func(ctx context.Context) error { return unlazy(ctx, src, i.refCfg, info.SessionID) }
	var id string
	if man == nil {
		// Several platforms, or another platform's image: the engine
		// takes the whole index, attestations too.
		id, err = i.e.storeIndex(ctx, top, names, fetch)
	} else {
		id, err = i.e.store(ctx, man, names, fetch)
		resp[exptypes.ExporterImageConfigDigestKey] = man.Config.Digest.String()
	}
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	resp[exptypes.ExporterImageDigestKey] = id
	return resp, finalize, ref, nil
}

// unlazy fetches the blobs of src's layers that BuildKit left lazy, as
// its image exporter does before storing an image itself: a layer of a
// registry's image whose snapshot the worker already had (FROM with
// --pull), or of an imported cache whose steps were CACHED, is in the
// image's manifest but not in the content store the load reads.
func unlazy(ctx context.Context, src *bkexporter.Source, cfg cacheconfig.RefConfig, sessionID string) error {
	var refs []cache.ImmutableRef
	if src.Ref != nil {
		refs = append(refs, src.Ref)
	}
	for _, ref := range src.Refs {
		if ref != nil {
			refs = append(refs, ref)
		}
	}
	for _, ref := range refs {
		remotes, err := ref.GetRemotes(ctx, false, cfg, false, session.NewGroup(sessionID))
		if err != nil {
			return err
		}
		if len(remotes) == 0 {
			continue
		}
		if u, ok := remotes[0].Provider.(cache.Unlazier); ok {
			if err := u.Unlazy(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// responseDescriptor reads the image exporter's descriptor of what it
// committed (a manifest, or an index with attestations).
func responseDescriptor(resp map[string]string) (ocispec.Descriptor, error) {
	var desc ocispec.Descriptor
	if s, ok := resp[exptypes.ExporterImageDescriptorKey]; ok {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return desc, err
		}
		if err := json.Unmarshal(b, &desc); err != nil {
			return desc, err
		}
		return desc, nil
	}
	return desc, errors.New("the image exporter returned no descriptor")
}

// platformManifest returns the manifest of the result's one image: desc
// itself, or the one image of an index when it is this platform's (its
// attestations are left aside). It returns nil for an index of several
// platforms' images or of another platform's, which the engine takes
// whole (storeIndex).
func (e *exporter) platformManifest(ctx context.Context, desc ocispec.Descriptor) (*ocispec.Manifest, error) {
	b, err := content.ReadBlob(ctx, e.cs, desc)
	if err != nil {
		return nil, err
	}
	if images.IsIndexType(desc.MediaType) {
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, err
		}
		var found []ocispec.Descriptor
		for _, m := range idx.Manifests {
			if m.Annotations["vnd.docker.reference.type"] == "" {
				found = append(found, m)
			}
		}
		if len(found) != 1 || (found[0].Platform != nil && !platforms.Default().Match(*found[0].Platform)) {
			return nil, nil
		}
		return e.platformManifest(ctx, found[0])
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(b, &man); err != nil {
		return nil, err
	}
	return &man, nil
}

// tagNames are the names the engine takes: tagged references (a name
// without a tag gets latest; digest references are BuildKit's own).
func tagNames(list string) []string {
	var out []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || strings.Contains(n, "@") {
			continue
		}
		named, err := reference.ParseNormalizedNamed(n)
		if err != nil {
			continue
		}
		out = append(out, reference.TagNameOnly(named).String())
	}
	return out
}

// store puts the image into the engine under names: a load, which names
// it, when the engine lacks it (after fetch, which brings its blobs into
// the content store), else the tags it lacks. It returns the engine's ID
// of the image.
func (e *exporter) store(ctx context.Context, man *ocispec.Manifest, names []string, fetch func(context.Context) error) (string, error) {
	// The engine finds an image by its config's digest too; its ID is
	// its manifest's digest.
	return e.put(ctx, man.Config.Digest.String(), names, fetch, func(ctx context.Context) error {
		return e.load(ctx, man, names)
	})
}

// storeIndex puts the index top, with every platform's image and the
// attestations it names, into the engine under names (an OCI layout
// load), unless the engine has it; it returns the engine's ID of it, the
// index's digest.
func (e *exporter) storeIndex(ctx context.Context, top ocispec.Descriptor, names []string, fetch func(context.Context) error) (string, error) {
	return e.put(ctx, top.Digest.String(), names, fetch, func(ctx context.Context) error {
		return e.loadLayout(ctx, top, names)
	})
}

// put finds the engine's image ref, or has load put it there (which
// names it) after fetch; then it gives the image the names it lacks and
// returns its ID.
func (e *exporter) put(ctx context.Context, ref string, names []string, fetch, load func(context.Context) error) (string, error) {
	done := progress.OneOff(ctx, "writing image "+ref)
	have, err := e.eng.inspectImage(ctx, ref)
	if err != nil {
		if err := fetch(ctx); err != nil {
			return "", done(err)
		}
		if err := load(ctx); err != nil {
			return "", done(err)
		}
		if have, err = e.eng.inspectImage(ctx, ref); err != nil {
			return "", done(err)
		}
		// The load named it.
		for _, n := range names {
			have.tags[n] = true
		}
	}
	done(nil)
	return have.ID, e.name(ctx, have, names)
}

// name gives the engine's image have the names it lacks.
func (e *exporter) name(ctx context.Context, have *engineImage, names []string) error {
	for _, n := range names {
		named := progress.OneOff(ctx, "naming to "+n)
		if have.tags[n] {
			// A rebuild of what the name already is: nothing to change.
			named(nil)
			continue
		}
		if err := named(e.eng.tag(ctx, have.ID, n)); err != nil {
			return err
		}
	}
	return nil
}
