package engine

import (
	"maps"
	"slices"
	"sync"
)

// netnsJoins knows which running containers joined another's network
// namespace (--network container:<id>), so that the end of the owner's
// run takes its interfaces out of a namespace that lives on, and leaves
// them to die with it otherwise (see DetachOptions.Shared).
type netnsJoins struct {
	mu sync.Mutex
	by map[string]map[string]bool // owner → joiners
}

// add records that joiner runs in owner's namespace.
func (j *netnsJoins) add(owner, joiner string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.by == nil {
		j.by = map[string]map[string]bool{}
	}
	if j.by[owner] == nil {
		j.by[owner] = map[string]bool{}
	}
	j.by[owner][joiner] = true
}

// remove forgets joiner, whose run ended.
func (j *netnsJoins) remove(joiner string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for owner, set := range j.by {
		delete(set, joiner)
		if len(set) == 0 {
			delete(j.by, owner)
		}
	}
}

// shared reports whether a running container joined owner's namespace.
func (j *netnsJoins) shared(owner string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.by[owner]) > 0
}

// joiners lists the running containers that joined owner's namespace.
func (j *netnsJoins) joiners(owner string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Sorted(maps.Keys(j.by[owner]))
}

// closure adds to owners the running containers that joined their
// namespaces, and those that joined these, and so on: a namespace
// reached through --network container:<a joiner> is the owner's.
func (j *netnsJoins) closure(owners []string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := slices.Clone(owners)
	seen := map[string]bool{}
	for _, id := range out {
		seen[id] = true
	}
	for i := 0; i < len(out); i++ {
		for _, joiner := range slices.Sorted(maps.Keys(j.by[out[i]])) {
			if !seen[joiner] {
				seen[joiner] = true
				out = append(out, joiner)
			}
		}
	}
	return out
}
