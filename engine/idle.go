package engine

import (
	"context"

	"github.com/hutch-engine/hutch/engine/container"
)

// Busy reports whether a container runs, is paused or waits to restart:
// work that must keep the daemon up when no client is connected
// (--idle-exit). An error reading the records counts as busy.
func (e *Engine) Busy(ctx context.Context) bool {
	list, err := e.containers.List(ctx, container.ListOptions{All: true})
	if err != nil {
		return true
	}
	for _, c := range list {
		if c.State.Running() {
			return true
		}
	}
	return false
}
