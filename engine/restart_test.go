package engine

import (
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

func TestShouldRestart(t *testing.T) {
	p := func(name containertypes.RestartPolicyMode, max int) containertypes.RestartPolicy {
		return containertypes.RestartPolicy{Name: name, MaximumRetryCount: max}
	}
	for _, tc := range []struct {
		policy        containertypes.RestartPolicy
		code, count   int
		manual, wants bool
	}{
		{p("", 0), 1, 0, false, false},
		{p("no", 0), 1, 0, false, false},
		{p("always", 0), 0, 7, false, true},
		{p("always", 0), 0, 0, true, true}, // a kill with another signal
		{p("unless-stopped", 0), 0, 0, false, true},
		{p("unless-stopped", 0), 0, 0, true, false},
		{p("on-failure", 0), 0, 0, false, false},
		{p("on-failure", 0), 3, 100, false, true},
		{p("on-failure", 2), 3, 1, false, true},
		{p("on-failure", 2), 3, 2, false, false},
		{p("on-failure", 2), 3, 0, true, true},
	} {
		if got := shouldRestart(tc.policy, tc.code, tc.count, tc.manual); got != tc.wants {
			t.Errorf("shouldRestart(%+v, code %d, count %d, manual %v) = %v", tc.policy, tc.code, tc.count, tc.manual, got)
		}
	}
}

func TestRestartAtBoot(t *testing.T) {
	c := func(status container.Status, policy containertypes.RestartPolicyMode, manual bool) *container.Container {
		return &container.Container{
			State:           container.State{Status: status, ExitCode: 143},
			HostConfig:      &containertypes.HostConfig{RestartPolicy: containertypes.RestartPolicy{Name: policy}},
			ManuallyStopped: manual,
		}
	}
	for _, tc := range []struct {
		c    *container.Container
		want bool
	}{
		{c(container.StatusExited, "always", true), true},
		{c(container.StatusExited, "unless-stopped", false), true},
		{c(container.StatusExited, "unless-stopped", true), false},
		{c(container.StatusExited, "on-failure", false), true},
		{c(container.StatusExited, "no", false), false},
		{c(container.StatusCreated, "always", false), false},
		{c(container.StatusRunning, "always", false), false},
	} {
		if got := restartAtBoot(tc.c); got != tc.want {
			t.Errorf("restartAtBoot(%s, %s, manual %v) = %v", tc.c.State.Status, tc.c.HostConfig.RestartPolicy.Name, tc.c.ManuallyStopped, got)
		}
	}
}

func TestRestartDelay(t *testing.T) {
	r := newRestarts()
	var got []time.Duration
	for range 12 {
		got = append(got, r.nextDelay("c", time.Second))
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000, 60000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want doubling from 100ms up to a minute", got)
		}
	}
	if d := r.nextDelay("c", 10*time.Second); d != 100*time.Millisecond {
		t.Errorf("after a run of 10s: %v, want 100ms again", d)
	}
	r.forget("c")
	if d := r.nextDelay("c", time.Second); d != 100*time.Millisecond {
		t.Errorf("after forget: %v, want 100ms", d)
	}
}

// The marks of a run add up: a restart's stop marks exitOnNext on top of
// the restart, which must outlive it.
func TestStopMarksAddUp(t *testing.T) {
	r := newRestarts()
	r.markRestart("c")
	r.markStopped("c", false, true)
	r.markStopped("c", true, false)
	if m := r.takeStopped("c"); m != (stopMark{manual: true, exitOnNext: true, restart: true}) {
		t.Errorf("marks %+v", m)
	}
	if m := r.takeStopped("c"); m != (stopMark{}) {
		t.Errorf("marks after take %+v", m)
	}
}
