package container

import (
	"cmp"
	"context"
	"slices"
)

// ListOptions selects containers for List, as GET /containers/json does.
type ListOptions struct {
	// All includes containers without a process; otherwise only running,
	// paused and restarting ones are listed (a "status" filter or a Limit
	// implies All, as in Docker).
	All bool
	// Limit, when > 0, returns at most that many of the newest matches.
	Limit int
	// Filters are docker ps's filters: id (prefix), name (exact or
	// regular expression, with or without "/"), label (key or key=value,
	// all must match), status, exited, before, since, ancestor, health,
	// is-task, volume, network, publish, expose and isolation.
	Filters Filters
	// Ancestors are the image IDs an "ancestor" filter accepts: the images
	// the filter names and their descendants, which only the image service
	// can resolve. With an ancestor filter and no Ancestors, nothing
	// matches, as in Docker when the images do not resolve.
	Ancestors map[string]bool
}

// List returns copies of the matching containers, newest first.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]*Container, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lf, err := compile(opts.Filters)
	if err != nil {
		return nil, err
	}
	var items []*Container
	var before, since string
	s.mu.RLock()
	for _, e := range s.byID {
		if e.rec != nil {
			items = append(items, e.rec)
		}
	}
	if lf.before != nil {
		before, err = s.resolveLocked(*lf.before)
	}
	if err == nil && lf.since != nil {
		since, err = s.resolveLocked(*lf.since)
	}
	if len(lf.names) > 0 {
		lf.linkNames = s.linkNamesLocked()
	}
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}

	slices.SortFunc(items, func(a, b *Container) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
	all := opts.All || lf.anyStatus || opts.Limit > 0
	out := []*Container{}
	for _, c := range items {
		if before != "" {
			// Skip everything newer than the "before" container, and it.
			if c.ID == before {
				before = ""
			}
			continue
		}
		if c.ID == since {
			break
		}
		if !all && !c.State.Running() || !lf.match(c, opts.Ancestors) {
			continue
		}
		out = append(out, deepCopy(c))
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}

func (s *Store) resolveLocked(ref string) (string, error) {
	e, err := s.lookupLocked(ref)
	if err != nil {
		return "", err
	}
	return e.rec.ID, nil
}
