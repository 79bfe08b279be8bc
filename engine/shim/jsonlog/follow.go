package jsonlog

import "time"

// growthWaiter wakes a following log reader when the file may have grown:
// from inotify where the platform has it (so `docker logs -f` shows lines
// as they are written), and from a tick that covers missed events.
type growthWaiter struct {
	ch      chan struct{}
	stop    chan struct{}
	unwatch func()
}

func newGrowthWaiter(path string) *growthWaiter {
	w := &growthWaiter{ch: make(chan struct{}, 1), stop: make(chan struct{})}
	interval := 100 * time.Millisecond
	if unwatch, ok := watchFile(path, w.poke); ok {
		w.unwatch = unwatch
		interval = time.Second
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.poke()
			}
		}
	}()
	return w
}

func (w *growthWaiter) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *growthWaiter) wait() <-chan struct{} { return w.ch }

func (w *growthWaiter) close() {
	close(w.stop)
	if w.unwatch != nil {
		w.unwatch()
	}
}
