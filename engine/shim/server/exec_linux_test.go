package server

import (
	"testing"

	"github.com/containerd/errdefs"
)

// An ended exec is forgotten once execKeep has passed, and only that exec:
// a later exec of the same id (none is reused, but nothing depends on it)
// stays.
func TestForgetExec(t *testing.T) {
	s := &server{execs: map[string]*execProc{}}
	old := &execProc{id: "a", done: make(chan struct{})}
	s.execs["a"] = old
	s.forgetExec(old)
	if _, err := s.lookupExec("a"); !errdefs.IsNotFound(err) {
		t.Fatalf("lookup after forget: %v, want not found", err)
	}
	newer := &execProc{id: "a", done: make(chan struct{})}
	s.execs["a"] = newer
	s.forgetExec(old)
	if e, err := s.lookupExec("a"); err != nil || e != newer {
		t.Errorf("the forget of an earlier exec removed a later one: %v %v", e, err)
	}
}
