package main

import (
	"context"
	"fmt"
	"time"
)

// benchColdStart starts the daemon on its storage (with the images the
// other phases pulled, no containers) and times each start until the
// first answered /_ping, and each SIGTERM until the exit.
func benchColdStart(ctx context.Context, e *env, res *Results) error {
	if err := e.stopDaemon(); err != nil {
		return err
	}
	for range e.cfg.coldRuns {
		d, err := e.startDaemon(ctx, "daemon")
		if err != nil {
			return err
		}
		res.ColdStart.add(d.ready)
		t0 := time.Now()
		if err := d.stop(); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
		res.Stop.add(time.Since(t0))
	}
	return nil
}
