package server

import (
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

// Ended execs are forgotten once execKeep has passed since their end, and
// only those: running execs and recent ends stay, and the timer is armed
// for the next one due.
func TestForgetEnded(t *testing.T) {
	now := time.Now()
	s := &server{execs: map[string]*execProc{
		"old":     {id: "old", ended: now.Add(-execKeep - time.Second)},
		"due":     {id: "due", ended: now.Add(-execKeep)},
		"recent":  {id: "recent", ended: now.Add(-time.Minute)},
		"running": {id: "running"},
	}}
	s.mu.Lock()
	s.forgetEnded(now)
	armed := s.forgetArmed
	s.mu.Unlock()
	for id, want := range map[string]bool{"old": false, "due": false, "recent": true, "running": true} {
		_, err := s.lookupExec(id)
		if got := err == nil; got != want {
			t.Errorf("exec %s kept: %v, want %v (%v)", id, got, want, err)
		}
		if !want && !errdefs.IsNotFound(err) {
			t.Errorf("exec %s: %v, want not found", id, err)
		}
	}
	if !armed {
		t.Error("a recent end is kept but no timer will forget it")
	}
}

// Nothing ended: no timer.
func TestForgetEndedNone(t *testing.T) {
	s := &server{execs: map[string]*execProc{"running": {id: "running"}}}
	s.forgetEnded(time.Now())
	if s.forgetArmed || len(s.execs) != 1 {
		t.Errorf("armed %v, %d records; want no timer and the running exec", s.forgetArmed, len(s.execs))
	}
}

// An ended exec has no stdio left to resize: a clear error, not a crash.
func TestResizeEndedExec(t *testing.T) {
	s := &server{execs: map[string]*execProc{"e": {id: "e", ended: time.Now()}}}
	if _, err := s.execStdio("e"); !errdefs.IsFailedPrecondition(err) {
		t.Errorf("resize of an ended exec: %v, want a failed precondition", err)
	}
	if _, err := s.execStdio("nope"); !errdefs.IsNotFound(err) {
		t.Errorf("resize of an unknown exec: %v, want not found", err)
	}
}
