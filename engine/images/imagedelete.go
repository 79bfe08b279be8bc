package images

import (
	"context"
	"fmt"
	"strings"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/image"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// RemoveRequest is DELETE /images/{name}?force=&noprune=.
type RemoveRequest struct {
	Force   bool
	NoPrune bool
	// Platforms, when set, are the platforms to delete: a multi-platform
	// image loses their content; an image of one platform must be of one
	// of them.
	Platforms []ocispec.Platform
}

// ImageRemove answers DELETE /images/{name} with Docker's rules: a name
// is untagged, and the image deleted once no reference is left; an ID
// deletes the image (with its references when they all belong to one
// repository). Containers made from the image make it a conflict (409):
// running ones always, stopped ones unless forced.
func (s *Service) ImageRemove(ctx context.Context, ref string, req RemoveRequest) ([]image.DeleteResponse, error) {
	if strings.TrimSpace(ref) == "" {
		return nil, errdefs.ErrInvalidArgument.WithMessage("image name cannot be blank")
	}
	if len(req.Platforms) > 0 && s.store != nil {
		if !req.Force {
			return nil, errdefs.ErrInvalidArgument.WithMessage("Content will be removed from all images referencing this variant. Use —-force to force delete.")
		}
		// An unknown image is the deleter's to report.
		if img, err := s.store.LookupImage(ctx, ref); err == nil {
			if img.Platforms != nil {
				return s.removePlatforms(ctx, img, req.Platforms)
			}
			if err := checkPlatform(img, ref, &req.Platforms[0]); err != nil {
				return nil, err
			}
		}
	}
	defer s.quiesce()()
	d, err := s.newImageDeleter(ctx)
	if err != nil {
		return nil, err
	}
	recs := []image.DeleteResponse{}
	err = d.remove(ctx, ref, req.Force, !req.NoPrune, &recs)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Untagged != "" {
			s.imageEvent(eventtypes.ActionUnTag, r.Untagged, r.Untagged)
		}
		if r.Deleted != "" {
			s.imageEvent(eventtypes.ActionDelete, r.Deleted, r.Deleted)
		}
	}
	return recs, nil
}

// removePlatforms deletes the content of multi-platform image img's
// platforms plats: each goes as Docker reports it, Deleted with its
// manifest's digest; the image and its names stay.
func (s *Service) removePlatforms(ctx context.Context, img *imagestore.Image, plats []ocispec.Platform) ([]image.DeleteResponse, error) {
	defer s.quiesce()()
	users, err := s.imageUsers(ctx)
	if err != nil {
		return nil, err
	}
	if len(users[img.ID]) > 0 {
		return nil, errdefs.ErrConflict.WithMessage(fmt.Sprintf("conflict: unable to delete %s (cannot be forced) - image is being used by running container %s", shortImageID(img.ID), container.ShortID(users[img.ID][0].ID)))
	}
	gone, err := s.store.DeletePlatforms(ctx, img.ID, plats)
	if err != nil {
		return nil, err
	}
	recs := []image.DeleteResponse{}
	for _, d := range gone {
		recs = append(recs, image.DeleteResponse{Deleted: d.Digest.String()})
		s.imageEvent(eventtypes.ActionDelete, d.Digest.String(), d.Digest.String())
	}
	return recs, nil
}

var imagePruneFilters = map[string]bool{"dangling": true, "label": true, "label!": true, "until": true}

// ImagePrune answers POST /images/prune: images no container uses that
// are dangling (no tag), or all of them with filters {"dangling":["false"]}.
func (s *Service) ImagePrune(ctx context.Context, filters string) (image.PruneReport, error) {
	f, err := container.ParseFiltersOf(filters, imagePruneFilters)
	if err != nil {
		return image.PruneReport{}, err
	}
	danglingOnly, err := filterBool(f, "dangling", true)
	if err != nil {
		return image.PruneReport{}, err
	}
	until, err := container.PruneUntil(f, time.Now())
	if err != nil {
		return image.PruneReport{}, err
	}
	defer s.quiesce()()
	d, err := s.newImageDeleter(ctx)
	if err != nil {
		return image.PruneReport{}, err
	}
	imgs, err := d.store.ListImages(ctx)
	if err != nil {
		return image.PruneReport{}, err
	}
	children := childrenOf(imgs)
	rep := image.PruneReport{}
	for _, img := range imgs {
		if err := ctx.Err(); err != nil {
			break // report what was deleted so far, as Docker does
		}
		if len(d.users[img.ID]) > 0 || children[img.ID] {
			continue
		}
		if !until.IsZero() && img.Created.After(until) {
			continue
		}
		var labels map[string]string
		if img.Config != nil {
			labels = img.Config.Config.Labels
		}
		if !container.PruneLabels(f, labels) {
			continue
		}
		refs := parseRefs(img.Refs)
		if danglingOnly && hasTag(refs) {
			continue
		}
		targets := []string{strings.TrimPrefix(img.ID, "sha256:")}
		if len(refs) > 0 {
			targets = img.Refs
		}
		for _, t := range targets {
			var recs []image.DeleteResponse
			if err := d.remove(ctx, t, false, true, &recs); err != nil {
				if !errdefs.IsConflict(err) && !errdefs.IsNotFound(err) {
					s.log.WarnContext(ctx, "prune: cannot delete image", "ref", t, "err", err)
				}
				continue
			}
			rep.ImagesDeleted = append(rep.ImagesDeleted, recs...)
		}
	}
	rep.SpaceReclaimed = uint64(d.reclaimed)
	s.pruneEvent(rep.SpaceReclaimed)
	return rep, nil
}

// imageDeleter carries what one removal or prune needs to know about the
// engine: the containers of each image.
type imageDeleter struct {
	store     imagestore.Store
	users     map[string][]*container.Container
	reclaimed int64
}

func (s *Service) newImageDeleter(ctx context.Context) (*imageDeleter, error) {
	store, err := s.imageStore()
	if err != nil {
		return nil, err
	}
	users, err := s.imageUsers(ctx)
	if err != nil {
		return nil, err
	}
	return &imageDeleter{store: store, users: users}, nil
}

// remove is Docker's ImageDelete.
func (d *imageDeleter) remove(ctx context.Context, ref string, force, prune bool, recs *[]image.DeleteResponse) error {
	img, err := d.store.LookupImage(ctx, ref)
	if err != nil {
		return err
	}
	refs := parseRefs(img.Refs)
	if isImageIDPrefix(img.ID, ref) {
		// An ID with at most one tag, all references in one repository:
		// the references go with the image.
		if isSingleReference(refs) {
			mask := conflictHard
			if !force {
				mask |= conflictStoppedContainer
			}
			if c := d.conflict(ctx, img, mask); c != nil {
				return c
			}
			if err := d.untagAll(ctx, img, recs); err != nil {
				return err
			}
		}
		return d.deleteImage(ctx, img.ID, force, prune, false, recs)
	}

	// A reference: untag it; the image goes when nothing else names it.
	if !force && isSingleReference(refs) {
		if users := d.users[img.ID]; len(users) > 0 {
			return errdefs.ErrConflict.WithMessage(fmt.Sprintf("conflict: unable to remove repository reference %q (must force) - container %s is using its referenced image %s",
				ref, container.ShortID(users[0].ID), shortImageID(img.ID)))
		}
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return InvalidReference(err)
	}
	named = reference.TagNameOnly(named)
	if c, ok := named.(reference.Canonical); ok && c.Digest().String() == img.ID {
		// repo@<ID> names the image in that repository, as in Docker's
		// containerd image store: every reference of the repository goes.
		for _, r := range refs {
			if r.Name() == named.Name() {
				if err := d.untag(ctx, img.ID, r, recs); err != nil {
					return err
				}
			}
		}
	} else if err := d.untag(ctx, img.ID, named, recs); err != nil {
		return err
	}
	if img, err = d.store.LookupImage(ctx, img.ID); err != nil {
		return err
	}
	refs = parseRefs(img.Refs)
	if _, canonical := named.(reference.Canonical); !canonical && !hasTagIn(refs, named.Name()) {
		// The last tag of the repository went: its digest references go too.
		var rest []reference.Named
		for _, r := range refs {
			if _, c := r.(reference.Canonical); c && r.Name() == named.Name() {
				if err := d.untag(ctx, img.ID, r, recs); err != nil {
					return err
				}
				continue
			}
			rest = append(rest, r)
		}
		refs = rest
	}
	if len(refs) > 0 {
		return nil
	}
	return d.deleteImage(ctx, img.ID, force, prune, true, recs)
}

// deleteImage is Docker's imageDeleteHelper: delete the image unless a
// conflict forbids it. quiet ignores conflicts of an image that is still
// named or in use: the untag that led here already did what was asked.
func (d *imageDeleter) deleteImage(ctx context.Context, id string, force, prune, quiet bool, recs *[]image.DeleteResponse) error {
	img, err := d.store.LookupImage(ctx, id)
	if err != nil {
		return err
	}
	mask := conflictHard
	if !force {
		mask |= conflictSoft
	}
	if c := d.conflict(ctx, img, mask); c != nil {
		if quiet && (len(img.Refs) > 0 || c.used || c.child) {
			return nil
		}
		return c
	}
	if err := d.untagAll(ctx, img, recs); err != nil {
		return err
	}
	if len(d.users[img.ID]) > 0 {
		// A forced delete of an image a stopped container was made from
		// or mounts: Docker deletes the image and the container keeps its
		// layers. The store cannot, so the image stays, untagged, until
		// the container goes: its restarts still find it.
		return nil
	}
	layers, err := d.store.DeleteImage(ctx, img.ID)
	if errdefs.IsConflict(err) && force {
		// A container made since the users were listed.
		return nil
	}
	if err != nil {
		return err
	}
	*recs = append(*recs, image.DeleteResponse{Deleted: img.ID})
	if img.Platforms != nil {
		// Docker reports a multi-platform image's index alone.
		return nil
	}
	chain := chainIDs(img.Layers)
	for _, id := range layers {
		if l, ok := chain[id]; ok {
			*recs = append(*recs, image.DeleteResponse{Deleted: l.chainID.String()})
			d.reclaimed += l.size
		}
	}
	if !prune || img.Parent == "" {
		return nil
	}
	err = d.deleteImage(ctx, img.Parent, false, true, true, recs)
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

func (d *imageDeleter) untag(ctx context.Context, id string, ref reference.Named, recs *[]image.DeleteResponse) error {
	if err := d.store.UntagImage(ctx, id, ref.String()); err != nil {
		return err
	}
	*recs = append(*recs, image.DeleteResponse{Untagged: reference.FamiliarString(ref)})
	return nil
}

func (d *imageDeleter) untagAll(ctx context.Context, img *imagestore.Image, recs *[]image.DeleteResponse) error {
	for _, r := range parseRefs(img.Refs) {
		if err := d.untag(ctx, img.ID, r, recs); err != nil {
			return err
		}
	}
	return nil
}

type conflictKind int

const (
	conflictDependentChild conflictKind = 1 << iota
	conflictRunningContainer
	conflictActiveReference
	conflictStoppedContainer

	conflictHard = conflictDependentChild | conflictRunningContainer
	conflictSoft = conflictActiveReference | conflictStoppedContainer
)

// imageConflict is Docker's image delete conflict: hard ones cannot be
// forced away.
type imageConflict struct {
	id    string
	hard  bool
	used  bool // a container uses the image
	child bool // an image was committed from it
	msg   string
}

func (c *imageConflict) Error() string {
	force := "must be forced"
	if c.hard {
		force = "cannot be forced"
	}
	return fmt.Sprintf("conflict: unable to delete %s (%s) - %s", shortImageID(c.id), force, c.msg)
}

func (c *imageConflict) Unwrap() error { return errdefs.ErrConflict }

func (d *imageDeleter) conflict(ctx context.Context, img *imagestore.Image, mask conflictKind) *imageConflict {
	if mask&conflictDependentChild != 0 {
		if imgs, err := d.store.ListImages(ctx); err == nil && childrenOf(imgs)[img.ID] {
			return &imageConflict{id: img.ID, hard: true, child: true, msg: "image has dependent child images"}
		}
	}
	users := d.users[img.ID]
	if mask&conflictRunningContainer != 0 {
		for _, c := range users {
			if c.State.Running() {
				return &imageConflict{id: img.ID, hard: true, used: true, msg: "image is being used by running container " + container.ShortID(c.ID)}
			}
		}
	}
	if mask&conflictActiveReference != 0 && len(img.Refs) > 0 {
		return &imageConflict{id: img.ID, msg: "image is referenced in multiple repositories"}
	}
	if mask&conflictStoppedContainer != 0 {
		for _, c := range users {
			if !c.State.Running() {
				return &imageConflict{id: img.ID, used: true, msg: "image is being used by stopped container " + container.ShortID(c.ID)}
			}
		}
	}
	return nil
}

func parseRefs(refs []string) []reference.Named {
	var out []reference.Named
	for _, r := range refs {
		if named, err := reference.ParseNormalizedNamed(r); err == nil {
			out = append(out, named)
		}
	}
	return out
}

func hasTag(refs []reference.Named) bool {
	for _, r := range refs {
		if _, ok := r.(reference.NamedTagged); ok {
			return true
		}
	}
	return false
}

func hasTagIn(refs []reference.Named, repo string) bool {
	for _, r := range refs {
		if _, ok := r.(reference.NamedTagged); ok && r.Name() == repo {
			return true
		}
	}
	return false
}

// isSingleReference reports whether refs are all from one repository with
// at most one tag (false for none), as Docker decides it.
func isSingleReference(refs []reference.Named) bool {
	if len(refs) <= 1 {
		return len(refs) == 1
	}
	var single reference.Named
	canonical := map[string]bool{}
	for _, r := range refs {
		if _, ok := r.(reference.Canonical); ok {
			canonical[r.Name()] = true
		} else if single == nil {
			single = r
		} else {
			return false
		}
	}
	if single == nil {
		single = refs[0]
	}
	return len(canonical) == 1 && canonical[single.Name()]
}

// isImageIDPrefix reports whether ref names id by (a prefix of) its ID.
func isImageIDPrefix(id, ref string) bool {
	return strings.HasPrefix(id, ref) || strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), ref)
}

// shortImageID is Docker's TruncateID of an image ID.
func shortImageID(id string) string {
	return container.ShortID(strings.TrimPrefix(id, "sha256:"))
}

type chainLayer struct {
	chainID digest.Digest
	size    int64
}

// chainIDs maps the store's layer IDs of an image to Docker's chain IDs
// (what `docker rmi` prints as deleted layers) and sizes.
func chainIDs(layers []imagestore.Layer) map[string]chainLayer {
	m := map[string]chainLayer{}
	var chain digest.Digest
	for _, l := range layers {
		if chain == "" {
			chain = l.DiffID
		} else {
			chain = digest.FromString(chain.String() + " " + l.DiffID.String())
		}
		m[l.ID] = chainLayer{chainID: chain, size: l.Size}
	}
	return m
}
