package container

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
)

// pending reports whether ch has neither a value nor been closed. Waiters
// are answered inside Update and Delete, so right after those return the
// answer is there or will never be.
func pending(ch <-chan WaitResult) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

func TestWait(t *testing.T) {
	ctx := context.Background()
	exit := func(code int, msg string) func(*Container) error {
		return func(c *Container) error { return c.State.SetExited(ExitInfo{Code: code, Error: msg}) }
	}
	tests := []struct {
		name  string
		cond  WaitCondition
		setup []func(*Container) error // before Wait
		steps []func(*Container) error // after Wait; the last one answers
		del   bool                     // answer by Delete instead
		want  WaitResult
	}{
		{"not-running of created answers at once", WaitNotRunning, nil, nil, false, WaitResult{}},
		{"default condition", "", []func(*Container) error{setExited(4)}, nil, false, WaitResult{ExitCode: 4}},
		{"not-running of running waits for the exit", WaitNotRunning,
			[]func(*Container) error{setRunning},
			[]func(*Container) error{func(c *Container) error { c.RestartCount++; return nil }, exit(3, "oops")},
			false, WaitResult{ExitCode: 3, Error: "oops"}},
		{"next-exit before start", WaitNextExit, nil,
			[]func(*Container) error{setRunning, exit(7, "")}, false, WaitResult{ExitCode: 7}},
		{"next-exit of exited waits for the next run", WaitNextExit, []func(*Container) error{setExited(1)},
			[]func(*Container) error{setRunning, exit(0, "")}, false, WaitResult{}},
		{"restart ends a run", WaitNextExit, []func(*Container) error{setRunning},
			[]func(*Container) error{func(c *Container) error { return c.State.SetRestarting(ExitInfo{Code: 9}) }},
			false, WaitResult{ExitCode: 9}},
		{"removed waits for the delete", WaitRemoved, nil,
			[]func(*Container) error{setRunning, exit(5, "")}, true, WaitResult{ExitCode: 5}},
		{"next-exit answered by delete", WaitNextExit, nil, nil, true, WaitResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t)
			c := mustCreate(t, s, newContainer("web", nil))
			for _, fn := range tt.setup {
				mustUpdate(t, s, c.ID, fn)
			}
			ch, err := s.Wait(ctx, c.ID, tt.cond)
			if err != nil {
				t.Fatal(err)
			}
			for i, fn := range tt.steps {
				if !pending(ch) {
					t.Fatalf("answered before step %d", i)
				}
				mustUpdate(t, s, c.ID, fn)
			}
			if tt.del {
				if !pending(ch) {
					t.Fatal("answered before Delete")
				}
				if err := s.Delete(ctx, c.ID); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case got, ok := <-ch:
				if !ok || got != tt.want {
					t.Fatalf("result %+v (ok %v), want %+v", got, ok, tt.want)
				}
			default:
				t.Fatal("not answered")
			}
		})
	}
}

func TestWaitCancelled(t *testing.T) {
	s, _ := newStore(t)
	c := mustCreate(t, s, newContainer("web", nil))
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Wait(ctx, c.ID, WaitNextExit)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("cancelled wait delivered a result")
	}
	// The waiter is gone: a later exit finds nobody to answer.
	mustUpdate(t, s, c.ID, setExited(1))
	s.mu.RLock()
	n := len(s.byID[c.ID].waiters)
	s.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d waiters left", n)
	}
}

func TestWaitErrors(t *testing.T) {
	s, _ := newStore(t)
	c := mustCreate(t, s, newContainer("web", nil))
	if _, err := s.Wait(context.Background(), NewID(), WaitNotRunning); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("unknown container: %v", err)
	}
	if _, err := s.Wait(context.Background(), c.ID, "never"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("unknown condition: %v", err)
	}
}
