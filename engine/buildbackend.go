package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/archive"
	"github.com/hutch-engine/hutch/engine/build"
	"github.com/hutch-engine/hutch/engine/build/buildctx"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/images"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/spec"
)

// BuildRequest is POST /build: the builder's request, and the name of the
// Dockerfile in the context.
type BuildRequest struct {
	build.Request
	DockerfileName string
	// Remote names the context when it is not the request's body: a git
	// repository or a URL (buildctx.Remote).
	Remote string
	// Auth are the client's credentials by registry (X-Registry-Config),
	// for the pulls of FROM.
	Auth map[string]registry.AuthConfig
}

// buildDir holds the contexts of builds under way; what a crash left there
// is removed when the engine starts.
func (e *Engine) buildDir() string { return filepath.Join(e.opts.DataRoot, "build") }

// Build unpacks the context (a tar, maybe compressed: the body, or what
// req.Remote names) and builds its
// Dockerfile with the classic builder (engine/build). Errors before any
// step are errdefs classes (a bad context or Dockerfile: invalid
// argument).
func (e *Engine) Build(ctx context.Context, req BuildRequest, body io.Reader, out build.Output) (string, error) {
	if _, err := e.imageStore(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(e.buildDir(), 0o700); err != nil {
		return "", err
	}
	if req.Remote != "" {
		rc, err := buildctx.Remote(ctx, req.Remote, req.DockerfileName, e.buildDir())
		if err != nil {
			return "", err
		}
		defer rc.Close()
		body = rc
	}
	dir, err := os.MkdirTemp(e.buildDir(), "context-")
	if err != nil {
		return "", err
	}
	bctx, err := buildctx.Extract(body, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", userBuildErr(err)
	}
	defer bctx.Close()
	df, err := bctx.Dockerfile(req.DockerfileName)
	if err != nil {
		return "", userBuildErr(err)
	}
	req.Dockerfile, req.Context = df, bctx
	id, err := build.Run(ctx, buildBackend{e, req.Auth}, req.Request, out)
	return id, userBuildErr(err)
}

// userBuildErr classes buildctx's errors as invalid arguments.
func userBuildErr(err error) error {
	var ce *buildctx.Error
	if errors.As(err, &ce) {
		return errdefs.ErrInvalidArgument.WithMessage(ce.Error())
	}
	return err
}

// buildBackend is the engine as engine/build sees it.
type buildBackend struct {
	e    *Engine
	auth map[string]registry.AuthConfig
}

func (b buildBackend) Image(ctx context.Context, ref string, pull bool, out build.Output) (build.Image, error) {
	store := b.e.images
	if ref == build.Scratch {
		return b.scratch(ctx)
	}
	if !pull {
		if id, cfg, err := store.ContainerImage(ctx, ref); err == nil {
			return build.Image{ID: id, Config: containerConfigOf(cfg)}, nil
		} else if !errdefs.IsNotFound(err) {
			return build.Image{}, err
		}
	}
	if strings.HasPrefix(ref, "sha256:") {
		return build.Image{}, errdefs.ErrNotFound.WithMessage("No such image: " + ref)
	}
	if err := b.e.ImagePull(ctx, images.PullRequest{FromImage: ref, Auth: b.authFor(ref)}, out.Progress); err != nil {
		return build.Image{}, err
	}
	id, cfg, err := store.ContainerImage(ctx, ref)
	if err != nil {
		return build.Image{}, err
	}
	return build.Image{ID: id, Config: containerConfigOf(cfg)}, nil
}

// authFor picks the credentials of ref's registry: the CLI names Docker
// Hub's https://index.docker.io/v1/, others by host[:port], some with a
// scheme.
func (b buildBackend) authFor(ref string) registry.AuthConfig {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return registry.AuthConfig{}
	}
	domain := reference.Domain(named)
	for key, ac := range b.auth {
		host := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
		host, _, _ = strings.Cut(host, "/")
		if host == domain || (domain == "docker.io" && (host == "index.docker.io" || host == "registry-1.docker.io")) {
			return ac
		}
	}
	return registry.AuthConfig{}
}

// scratchLabel marks the image FROM scratch builds on.
const scratchLabel = "org.hutch.build.scratch"

// scratch is the image of FROM scratch: one empty layer (containers need
// an image to make their layer on), made at the first such build, with a
// fixed creation time so that it is the same image, and the steps made
// on it stay cached, when it is made again after a prune.
func (b buildBackend) scratch(ctx context.Context) (build.Image, error) {
	imgs, err := b.e.images.ListImages(ctx)
	if err != nil {
		return build.Image{}, err
	}
	for _, img := range imgs {
		if img.Config != nil && img.Config.Config.Labels[scratchLabel] == "1" {
			return build.Image{ID: img.ID}, nil
		}
	}
	var empty bytes.Buffer
	if err := tar.NewWriter(&empty).Close(); err != nil {
		return build.Image{}, err
	}
	epoch := time.Unix(0, 0).UTC()
	const note = "the empty base of FROM scratch"
	id, err := b.e.images.ImportImage(ctx, &empty, imagestore.ImportConfig{Comment: note, Image: dockerspec.DockerOCIImage{
		Image: ocispec.Image{
			Created:  &epoch,
			Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
			History:  []ocispec.History{{Created: &epoch, Comment: note}},
		},
		Config: dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: map[string]string{scratchLabel: "1"}}},
	}}, "")
	if err != nil {
		return build.Image{}, fmt.Errorf("making the image of FROM scratch: %w", err)
	}
	return build.Image{ID: id}, nil
}

// containerConfigOf is an image's config as a container's.
func containerConfigOf(img *dockerspec.DockerOCIImage) containertypes.Config {
	if img == nil {
		return containertypes.Config{}
	}
	return spec.ImageConfig(&img.Config)
}

func (b buildBackend) Create(ctx context.Context, cfg *containertypes.Config, hc *containertypes.HostConfig) (string, error) {
	resp, err := b.e.ContainerCreate(ctx, CreateRequest{Config: cfg, HostConfig: hc})
	return resp.ID, err
}

func (b buildBackend) Run(ctx context.Context, id string, w io.Writer) (int, error) {
	attached := make(chan struct{})
	attachDone := make(chan error, 1)
	go func() {
		attachDone <- b.e.ContainerAttach(ctx, id, AttachRequest{Stream: true, Stdout: true, Stderr: true,
			Attached: func() { close(attached) }}, nil, w, w)
	}()
	select {
	case <-attached:
	case err := <-attachDone:
		return -1, err
	}
	waitc, err := b.e.ContainerWait(ctx, id, WaitRequest{Condition: string(container.WaitNextExit)})
	if err != nil {
		return -1, err
	}
	if err := b.e.ContainerStart(ctx, id); err != nil {
		return -1, err
	}
	var res container.WaitResult
	select {
	case res = <-waitc:
	case <-ctx.Done():
		b.e.ContainerKill(context.WithoutCancel(ctx), id, "KILL")
		return -1, ctx.Err()
	}
	<-attachDone
	if res.Error != "" {
		return -1, errors.New(res.Error)
	}
	return res.ExitCode, nil
}

func (b buildBackend) Stat(ctx context.Context, id, p string) (bool, bool, error) {
	t, err := b.e.openCpTarget(ctx, id, p, true)
	if err != nil {
		return false, false, err
	}
	defer t.close()
	// Followed as a directory first (symlinks included), else as is.
	if ent, _, err := t.root.Stat(strings.TrimSuffix(t.abs, "/") + "/"); err == nil {
		ent.Close()
		return true, true, nil
	}
	ent, _, err := t.root.Stat(t.abs)
	if err != nil {
		if err = archive.FileError(err, p, id); errdefs.IsNotFound(err) {
			return false, false, nil
		}
		return false, false, err
	}
	ent.Close()
	return true, false, nil
}

func (b buildBackend) Owner(ctx context.Context, id, chown string) (int, int, error) {
	_, root, done, err := b.e.openContainerFS(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	u, err := spec.ResolveUser(root.Path(), chown, nil, b.e.opts.IDMap == "single")
	if err != nil {
		return 0, 0, err
	}
	return int(u.UID), int(u.GID), nil
}

func (b buildBackend) Extract(ctx context.Context, id string, tar io.Reader) error {
	return b.e.ContainerExtractToDir(ctx, id, ExtractRequest{Path: "/", RootfsOnly: true}, tar)
}

func (b buildBackend) Archive(ctx context.Context, id, p string) (io.ReadCloser, error) {
	rc, _, err := b.e.archivePath(ctx, id, p, true)
	return rc, err
}

// Commit is docker commit with the builder's exact config and history.
// Each image it stores is announced with an image create event, as
// Docker's builder announces the images of its steps.
func (b buildBackend) Commit(ctx context.Context, id string, cfg *containertypes.Config, createdBy, author string) (string, error) {
	c, err := b.e.containers.Get(ctx, id)
	if err != nil {
		return "", err
	}
	img, err := b.e.commitOf(ctx, c, imageConfigOf(cfg), author, "")
	if err != nil {
		return "", err
	}
	img.History.CreatedBy = createdBy
	imageID, err := b.e.images.CommitImage(ctx, c.Runtime.RootfsID, img)
	if err != nil {
		return "", err
	}
	b.e.imageEvent(eventtypes.ActionCreate, imageID, imageID)
	return imageID, nil
}

func (b buildBackend) Remove(ctx context.Context, id string) error {
	return b.e.ContainerRemove(ctx, id, RemoveRequest{Force: true, Volumes: true})
}

func (b buildBackend) Cached(ctx context.Context, parent, createdBy string, cfg *containertypes.Config) (string, error) {
	imgs, err := b.e.images.ListImages(ctx)
	if err != nil {
		return "", err
	}
	want, err := json.Marshal(imageConfigOf(cfg))
	if err != nil {
		return "", err
	}
	var found *imagestore.Image
	for i := range imgs {
		img := &imgs[i]
		if img.Parent != parent || img.Config == nil || len(img.Config.History) == 0 {
			continue
		}
		if img.Config.History[len(img.Config.History)-1].CreatedBy != createdBy {
			continue
		}
		if got, err := json.Marshal(img.Config.Config); err != nil || !bytes.Equal(got, want) {
			continue
		}
		if found == nil || img.Created.After(found.Created) {
			found = img
		}
	}
	if found == nil {
		return "", nil
	}
	return found.ID, nil
}

func (b buildBackend) Tag(ctx context.Context, id, ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return images.InvalidReference(err)
	}
	tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return errdefs.ErrInvalidArgument.WithMessage("invalid reference: " + ref)
	}
	return b.e.ImageTag(ctx, id, tagged.Name(), tagged.Tag())
}

var _ build.Backend = buildBackend{}
