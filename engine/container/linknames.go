package container

import (
	"path"
	"slices"

	containertypes "github.com/moby/moby/api/types/container"
)

// OnDefaultBridge reports whether a container of this network mode is on
// the default bridge, where links are Docker's legacy links.
func OnDefaultBridge(mode containertypes.NetworkMode) bool {
	return mode == "" || mode.IsDefault() || mode.IsBridge()
}

// maxJoinChain bounds the walk along --network container:<ref> joins,
// which records written by hand could make circular.
const maxJoinChain = 16

// LinkNames are the names legacy links give containers, by ID:
// "/parent/alias" for each link of a container on the default bridge, on
// the container it reaches. Docker reserves these names for the linked
// container, lists them among its Names and matches the name filter
// against them. Of two links of one parent under one alias, the first
// has the name, as in Docker.
func (s *Store) LinkNames() map[string][]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.linkNamesLocked()
}

func (s *Store) linkNamesLocked() map[string][]string {
	out := map[string][]string{}
	for _, e := range s.byID {
		p := e.rec
		if p == nil || p.HostConfig == nil || len(p.HostConfig.Links) == 0 || !OnDefaultBridge(p.HostConfig.NetworkMode) {
			continue
		}
		taken := map[string]bool{}
		for _, l := range p.HostConfig.Links {
			name, alias, err := ParseLink(l)
			if err != nil {
				continue
			}
			child := s.linkTargetLocked(name)
			full := path.Join(p.Name, alias)
			if child == nil || taken[full] {
				continue
			}
			taken[full] = true
			out[child.ID] = append(out[child.ID], full)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

// linkTargetLocked is the container a link to ref reaches: ref's, or, when
// that one shares another's network, the one whose network it is. nil
// when there is none.
func (s *Store) linkTargetLocked(ref string) *Container {
	for range maxJoinChain {
		e, err := s.lookupLocked(ref)
		if err != nil {
			return nil
		}
		if e.rec.HostConfig == nil || !e.rec.HostConfig.NetworkMode.IsContainer() {
			return e.rec
		}
		ref = e.rec.HostConfig.NetworkMode.ConnectedContainer()
	}
	return nil
}
