package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A removal waits for a start under way and keeps the next start out
// until it ends; two removals may hold at once.
func TestHoldStarts(t *testing.T) {
	e := &Engine{runs: newRuns()}
	started := make(chan struct{})
	e.runs.starting["c1"] = started

	held := make(chan func())
	go func() {
		end, err := e.holdStarts(context.Background(), "c1")
		if err != nil {
			t.Error(err)
		}
		held <- end
	}()
	select {
	case <-held:
		t.Fatal("holdStarts returned while a start was under way")
	case <-time.After(50 * time.Millisecond):
	}
	e.runs.mu.Lock()
	delete(e.runs.starting, "c1")
	e.runs.mu.Unlock()
	close(started)
	end := <-held
	end2, err := e.holdStarts(context.Background(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if n := e.runs.removing["c1"]; n != 2 {
		t.Fatalf("removals held: %d, want 2", n)
	}
	end()
	end2()
	if _, ok := e.runs.removing["c1"]; ok {
		t.Fatal("the hold outlived both removals")
	}

	// A removal whose client goes away while it waits holds nothing.
	e.runs.starting["c2"] = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.holdStarts(ctx, "c2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("holdStarts with its context done: %v", err)
	}
	if _, ok := e.runs.removing["c2"]; ok {
		t.Fatal("a cancelled removal holds starts out")
	}
}
