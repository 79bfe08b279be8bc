package engine

import (
	"context"
	"strconv"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/imagestore"
)

// ancestorIDs resolves docker ps's "ancestor" filter as Docker does: the
// images refs name (by name, digest reference, ID or ID prefix) and,
// at any depth, the images made from them (a commit or a build step
// records its parent). A reference that names no image is skipped: a
// filter of only those matches nothing.
func (e *Engine) ancestorIDs(ctx context.Context, refs []string) (map[string]bool, error) {
	ids := map[string]bool{}
	if e.images == nil {
		return ids, nil
	}
	for _, ref := range refs {
		if img, err := e.images.LookupImage(ctx, ref); err == nil {
			ids[img.ID] = true
		}
	}
	if len(ids) == 0 {
		return ids, nil
	}
	imgs, err := e.images.ListImages(ctx)
	if err != nil {
		return nil, err
	}
	return withDescendants(ids, imgs), nil
}

// withDescendants adds to ids every image of imgs whose chain of parents
// reaches one of them.
func withDescendants(ids map[string]bool, imgs []imagestore.Image) map[string]bool {
	for grew := true; grew; {
		grew = false
		for _, img := range imgs {
			if !ids[img.ID] && img.Parent != "" && ids[img.Parent] {
				ids[img.ID] = true
				grew = true
			}
		}
	}
	return ids
}

// ContainerPrune removes the containers that do not run (created,
// exited, dead) and match the filters: "until" (created before it),
// "label" (every one holds) and "label!" (not all of them hold), as
// Docker's; any other key is an invalid filter.
func (e *Engine) ContainerPrune(ctx context.Context, filters string) (containertypes.PruneReport, error) {
	f, err := container.ParseFiltersOf(filters, container.PruneKeys)
	if err != nil {
		return containertypes.PruneReport{}, err
	}
	until, err := container.PruneUntil(f, time.Now())
	if err != nil {
		return containertypes.PruneReport{}, err
	}
	list, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		return containertypes.PruneReport{}, err
	}
	var rep containertypes.PruneReport
	for _, c := range list {
		if ctx.Err() != nil {
			break // report what was removed so far, as Docker does
		}
		if c.State.Running() || !until.IsZero() && c.Created.After(until) {
			continue
		}
		var labels map[string]string
		if c.Config != nil {
			labels = c.Config.Labels
		}
		if !container.PruneLabels(f, labels) {
			continue
		}
		// As Docker: the space is what the containers wrote.
		rw, sizeErr := e.rwSize(ctx, c)
		if err := e.ContainerRemove(ctx, c.ID, RemoveRequest{}); err != nil {
			e.log.Warn("prune", "container", c.ID, "err", err)
			continue
		}
		rep.ContainersDeleted = append(rep.ContainersDeleted, c.ID)
		if sizeErr == nil && rw > 0 {
			rep.SpaceReclaimed += uint64(rw)
		}
	}
	e.pruneEvent(eventtypes.ContainerEventType, rep.SpaceReclaimed)
	return rep, nil
}

// pruneEvent is the event Docker sends after a prune of containers,
// images, volumes or networks: no actor ID, the space reclaimed as an
// attribute.
func (e *Engine) pruneEvent(typ eventtypes.Type, reclaimed uint64) {
	e.events.Publish(typ, eventtypes.ActionPrune, "", map[string]string{"reclaimed": strconv.FormatUint(reclaimed, 10)})
}
