package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	containertypes "github.com/moby/moby/api/types/container"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/images"
	"github.com/hutch-engine/hutch/engine/imagestore"
	"github.com/hutch-engine/hutch/engine/spec"
)

// docker commit: the container's rootfs changes become a layer on top of
// its image, with a config made from the container's (commitconfig.go).
// A running container is committed as it is: with pause=true and a cgroup
// freezer it is frozen for the copy, otherwise (rootless containers on
// cgroup v1 have no freezer) the layer is a best-effort snapshot of files
// that may be changing, as Docker's is with --pause=false.

// CommitRequest is POST /commit.
type CommitRequest struct {
	// Container is the container's name, ID or ID prefix.
	Container string
	// Repo and Tag name the new image (no repo: no name).
	Repo, Tag string
	// Comment and Author go into the new history entry and the config.
	Comment, Author string
	// Pause freezes a running container during the commit when the host
	// has a freezer.
	Pause bool
	// Changes are Dockerfile instructions applied to the config.
	Changes []string
	// Config, when not nil, replaces the container's config as the base of
	// the new one (the request body); fields it leaves empty still come
	// from the container.
	Config *containertypes.Config
}

// ContainerCommit answers docker commit and returns the new image's ID.
// Bad parameters are errdefs.ErrInvalidArgument, an unknown container
// errdefs.ErrNotFound.
func (e *Engine) ContainerCommit(ctx context.Context, req CommitRequest) (string, error) {
	store, err := e.imageStore()
	if err != nil {
		return "", err
	}
	named, err := images.RepoTagReference(req.Repo, req.Tag)
	if err != nil {
		return "", err
	}
	c, err := e.containers.Get(ctx, req.Container)
	if err != nil {
		return "", err
	}
	switch {
	case c.State.Status == container.StatusDead:
		return "", errdefs.ErrConflict.WithMessage(fmt.Sprintf("You cannot commit container %s which is Dead", c.ID))
	case c.State.Removing:
		return "", errdefs.ErrConflict.WithMessage(fmt.Sprintf("You cannot commit container %s which is being removed", c.ID))
	case c.Runtime.RootfsID == "":
		return "", errdefs.ErrFailedPrecondition.WithMessage(fmt.Sprintf("container %s has no root filesystem", c.ID))
	}
	cfg, err := commitConfig(req.Config, req.Changes, c.Config)
	if err != nil {
		return "", err
	}
	img, err := e.commitOf(ctx, c, cfg, req.Author, req.Comment)
	if err != nil {
		return "", err
	}
	if named != nil {
		img.Name = named.String()
	}
	if req.Pause && c.State.Running() && !c.State.Paused() {
		defer e.pauseForCommit(ctx, c.ID)()
	}
	id, err := store.CommitImage(ctx, c.Runtime.RootfsID, img)
	if err != nil {
		return "", err
	}
	e.containerEvent(c, eventtypes.ActionCommit, map[string]string{"comment": req.Comment, "imageID": id})
	return id, nil
}

// commitOf describes the commit of container c with config cfg: on its
// image, without the mount points the runtime made.
func (e *Engine) commitOf(ctx context.Context, c *container.Container, cfg dockerspec.DockerOCIImageConfig, author, comment string) (imagestore.CommitImage, error) {
	_, base, err := e.images.ContainerImage(ctx, c.ImageID)
	if err != nil {
		return imagestore.CommitImage{}, fmt.Errorf("the image of container %s: %w", c.ID, err)
	}
	changes, err := e.images.RootfsChanges(ctx, c.Runtime.RootfsID)
	if err != nil {
		return imagestore.CommitImage{}, err
	}
	img := commitImage(base, cfg, c, author, comment, time.Now().UTC())
	img.Exclude = runtimeArtifacts(changes)
	return img, nil
}

// commitImage builds the new image's description from its source image's
// config, the committed config and the container.
func commitImage(base *dockerspec.DockerOCIImage, cfg dockerspec.DockerOCIImageConfig, c *container.Container, author, comment string, now time.Time) imagestore.CommitImage {
	img := imagestore.CommitImage{Comment: comment, Parent: c.ImageID}
	if base != nil {
		img.Image.Image = ocispec.Image{
			Platform: base.Platform,
			History:  slices.Clone(base.History),
		}
	}
	if img.Image.OS == "" {
		img.Image.OS = "linux"
	}
	if img.Image.Architecture == "" {
		img.Image.Architecture = runtime.GOARCH
	}
	img.Image.Created, img.Image.Author, img.Image.Config = &now, author, cfg
	var createdBy string
	if c.Config != nil {
		createdBy = strings.Join(c.Config.Cmd, " ")
	}
	img.History = ocispec.History{Created: &now, Author: author, CreatedBy: createdBy, Comment: comment}
	img.Container, img.ContainerConfig = c.ID, c.Config
	return img
}

// pauseForCommit freezes the container and returns what thaws it. Where
// there is no freezer (rootless on cgroup v1), or the container stopped
// meanwhile, it does nothing: the commit goes on without it, as a
// best-effort snapshot.
func (e *Engine) pauseForCommit(ctx context.Context, id string) (resume func()) {
	err := e.freeze(ctx, id, true)
	if err != nil {
		if !errors.Is(err, errNoFreezer) {
			e.log.WarnContext(ctx, "commit: cannot pause the container, committing it running", "container", id, "err", err)
		}
		return func() {}
	}
	return func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := e.freeze(bg, id, false); err != nil {
			e.log.WarnContext(ctx, "commit: cannot unpause the container", "container", id, "err", err)
		}
	}
}

// ContainerChanges answers GET /containers/{id}/changes (docker diff): the
// rootfs's changes against its image, without the mount points the
// runtime made.
func (e *Engine) ContainerChanges(ctx context.Context, ref string) ([]containertypes.FilesystemChange, error) {
	store, err := e.imageStore()
	if err != nil {
		return nil, err
	}
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if c.Runtime.RootfsID == "" {
		return nil, errdefs.ErrFailedPrecondition.WithMessage(fmt.Sprintf("container %s has no root filesystem", c.ID))
	}
	changes, err := store.RootfsChanges(ctx, c.Runtime.RootfsID)
	if err != nil {
		return nil, err
	}
	drop := runtimeArtifacts(changes)
	out := make([]containertypes.FilesystemChange, 0, len(changes))
	for _, ch := range changes {
		if !drop[ch.Path] {
			out = append(out, ch)
		}
	}
	return out, nil
}

// mountPoints are where the runtime mounts something over the rootfs,
// creating the file or directory when the image lacks it. Docker makes
// them in a separate "init" layer, so they are never a container's
// changes; here they land in the container's own layer and are left out
// of docker diff and commit instead.
var mountPoints = map[string]bool{
	"/proc":              true,
	"/dev":               true,
	"/sys":               true,
	"/etc/hosts":         true,
	"/etc/hostname":      true,
	"/etc/resolv.conf":   true,
	spec.InitDestination: true,
}

// runtimeArtifacts picks the changes that are only the runtime's doing:
// mount points added to the rootfs, and the directories that changed only
// because such a mount point was made in them ("C /etc" for an added
// /etc/hosts).
func runtimeArtifacts(changes []containertypes.FilesystemChange) map[string]bool {
	drop := map[string]bool{}
	ancestors := map[string]bool{} // directories holding a dropped mount point
	for _, ch := range changes {
		if ch.Kind == containertypes.ChangeAdd && mountPoints[ch.Path] {
			drop[ch.Path] = true
			for d := path.Dir(ch.Path); d != "/"; d = path.Dir(d) {
				ancestors[d] = true
			}
		}
	}
	if len(drop) == 0 {
		return drop
	}
	// A directory holding anything else the container changed stays.
	kept := map[string]bool{}
	for _, ch := range changes {
		if drop[ch.Path] || ancestors[ch.Path] {
			continue
		}
		for d := path.Dir(ch.Path); d != "/"; d = path.Dir(d) {
			kept[d] = true
		}
	}
	for _, ch := range changes {
		if ancestors[ch.Path] && !kept[ch.Path] && ch.Kind != containertypes.ChangeDelete {
			drop[ch.Path] = true
		}
	}
	return drop
}
