package engine

import (
	"context"
	"log/slog"
	"time"
)

// phase logs, at debug level, how long a step of a container's life took:
// `hutch daemon --log-level debug` then shows where a start or a removal
// spends its time. Use as `defer e.phase("mount", id)()`.
func (e *Engine) phase(name, id string) func() {
	if !e.log.Enabled(context.Background(), slog.LevelDebug) {
		return func() {}
	}
	start := time.Now()
	return func() {
		e.log.Debug("phase", "name", name, "container", shortID(id), "took", time.Since(start))
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
