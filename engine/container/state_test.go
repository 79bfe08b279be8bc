package container

import (
	"errors"
	containertypes "github.com/moby/moby/api/types/container"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const testID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// fromStates are the states every operation is tried from, in the column
// order of the matrix below.
var fromStates = []struct {
	name string
	st   State
}{
	{"created", State{Status: StatusCreated}},
	{"running", State{Status: StatusRunning, Pid: 42, StartedAt: t0}},
	{"paused", State{Status: StatusPaused, Pid: 42, StartedAt: t0}},
	{"restarting", State{Status: StatusRestarting, StartedAt: t0, FinishedAt: t0.Add(time.Second), ExitCode: 1}},
	{"exited", State{Status: StatusExited, StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
	{"dead", State{Status: StatusDead, StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
	{"removing", State{Status: StatusExited, Removing: true, StartedAt: t0, FinishedAt: t0.Add(time.Second)}},
	{"removing-live", State{Status: StatusRunning, Removing: true, Pid: 42, StartedAt: t0}},
}

func TestTransitions(t *testing.T) {
	exit := ExitInfo{Code: 3, FinishedAt: t0.Add(time.Minute)}
	// Each row: the operation and its outcome from each of fromStates
	// ("ok", "304" for errdefs.ErrNotModified, "409" for ErrConflict), then
	// what the state must look like after an allowed one.
	ops := []struct {
		name  string
		do    func(*State) error
		want  string
		after func(before State, after State) bool
	}{
		{"CheckStart", func(s *State) error { return s.CheckStart() },
			"ok 304 409 304 ok 409 409 304", unchanged},
		{"SetRunning", func(s *State) error { return s.SetRunning(7, t0.Add(time.Hour)) },
			"ok 304 409 ok ok 409 409 304",
			func(_, a State) bool {
				return a.Status == StatusRunning && a.Pid == 7 && a.StartedAt.Equal(t0.Add(time.Hour)) && a.ExitCode == 0 && a.Error == ""
			}},
		{"CheckRestart", func(s *State) error { return s.CheckRestart() },
			"ok ok ok ok ok 409 409 409", unchanged},
		{"CheckStop", func(s *State) error { return s.CheckStop() },
			"304 ok ok ok 304 304 304 ok", unchanged},
		{"SetExited", func(s *State) error { return s.SetExited(exit) },
			"304 ok ok ok 304 304 304 ok",
			func(b, a State) bool {
				return a.Status == StatusExited && a.Pid == 0 && a.ExitCode == 3 && a.FinishedAt.Equal(exit.FinishedAt) && a.Removing == b.Removing && a.ended
			}},
		{"SetRestarting", func(s *State) error { return s.SetRestarting(exit) },
			"409 ok ok 304 409 409 409 409",
			func(_, a State) bool { return a.Status == StatusRestarting && a.Pid == 0 && a.ExitCode == 3 && a.ended }},
		{"SetStartFailed", func(s *State) error { return s.SetStartFailed(127, "not found") },
			"ok 304 409 ok ok 409 409 304",
			func(b, a State) bool {
				want := b.Status
				if want == StatusRestarting {
					want = StatusExited
				}
				return a.Status == want && a.ExitCode == 127 && a.Error == "not found"
			}},
		{"CheckKill", func(s *State) error { return s.CheckKill(testID) },
			"409 ok ok ok 409 409 409 ok", unchanged},
		{"SetPaused", func(s *State) error { return s.SetPaused(testID) },
			"409 ok 409 409 409 409 409 ok",
			func(_, a State) bool { return a.Status == StatusPaused }},
		{"SetUnpaused", func(s *State) error { return s.SetUnpaused(testID) },
			"409 409 ok 409 409 409 409 409",
			func(_, a State) bool { return a.Status == StatusRunning }},
		{"CheckExec", func(s *State) error { return s.CheckExec(testID) },
			"409 ok 409 409 409 409 409 ok", unchanged},
		{"CheckAttach", func(s *State) error { return s.CheckAttach("web") },
			"ok ok 409 409 ok ok ok ok", unchanged},
		{"CheckRemove", func(s *State) error { return s.CheckRemove("web", false) },
			"ok 409 409 409 ok ok 409 409", unchanged},
		{"SetRemoving/force", func(s *State) error { return s.SetRemoving("web", true) },
			"ok ok ok ok ok ok 409 409",
			func(b, a State) bool { return a.Removing && a.Status == b.Status }},
		{"SetDead", func(s *State) error { return s.SetDead("gone") },
			"ok 409 409 409 ok ok ok 409",
			func(b, a State) bool { return a.Status == StatusDead && a.Error == "gone" && a.Removing == b.Removing }},
	}
	for _, op := range ops {
		want := strings.Fields(op.want)
		if len(want) != len(fromStates) {
			t.Fatalf("%s: %d outcomes for %d states", op.name, len(want), len(fromStates))
		}
		for i, from := range fromStates {
			t.Run(op.name+"/"+from.name, func(t *testing.T) {
				st := from.st
				err := op.do(&st)
				switch want[i] {
				case "ok":
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if !op.after(from.st, st) {
						t.Fatalf("state after: %+v", st)
					}
					return
				case "304":
					if !errors.Is(err, errdefs.ErrNotModified) {
						t.Fatalf("err = %v, want not modified", err)
					}
				case "409":
					if !errors.Is(err, errdefs.ErrConflict) {
						t.Fatalf("err = %v, want conflict", err)
					}
				}
				var se *StateError
				if !errors.As(err, &se) || se.Status != from.st.Effective() {
					t.Fatalf("err = %#v, want *StateError with status %s", err, from.st.Effective())
				}
				if !reflect.DeepEqual(st, from.st) {
					t.Fatalf("refused transition changed the state: %+v", st)
				}
			})
		}
	}
}

func unchanged(b, a State) bool { return reflect.DeepEqual(a, b) }

func TestStateMessages(t *testing.T) {
	running := State{Status: StatusRunning}
	paused := State{Status: StatusPaused}
	exited := State{Status: StatusExited, StartedAt: t0}
	removing := State{Status: StatusExited, Removing: true}
	restarting := State{Status: StatusRestarting}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"start running", running.CheckStart(), "container is already running"},
		{"start paused", paused.CheckStart(), "cannot start a paused container, try unpause instead"},
		{"start removing", removing.CheckStart(), "container is marked for removal and cannot be started"},
		{"start dead", State{Status: StatusDead}.CheckStart(), "container is marked for removal and cannot be started"},
		{"stop exited", exited.CheckStop(), "container is already stopped"},
		{"rm running", running.CheckRemove("/x", false),
			`cannot remove container "/x": container is running: stop the container before removing or force remove`},
		{"rm restarting", restarting.CheckRemove("x", false),
			`cannot remove container "x": container is restarting: stop the container before removing or force remove`},
		{"rm paused", paused.CheckRemove("x", false), `cannot remove container "x": container is paused and must be unpaused first`},
		{"rm removing", removing.CheckRemove("x", true), "removal of container x is already in progress"},
		{"kill exited", exited.CheckKill(testID), "container " + testID + " is not running"},
		{"pause paused", paused.CheckPause("abc"), "container abc is already paused"},
		{"pause restarting", restarting.CheckPause("abc"), "Container abc is restarting, wait until the container is running"},
		{"unpause running", running.CheckUnpause("abc"), "Container abc is not paused"},
		{"exec paused", paused.CheckExec("abc"), "Container abc is paused, unpause the container before exec"},
		{"attach paused", paused.CheckAttach("web"), "container web is paused, unpause the container before attach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || tt.err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", tt.err, tt.want)
			}
		})
	}
}

func TestEffective(t *testing.T) {
	want := []Status{StatusCreated, StatusRunning, StatusPaused, StatusRestarting, StatusExited, StatusDead, StatusRemoving, StatusRunning}
	for i, from := range fromStates {
		if got := from.st.Effective(); got != want[i] {
			t.Errorf("%s: Effective() = %s, want %s", from.name, got, want[i])
		}
	}
}

func TestDescribe(t *testing.T) {
	now := t0.Add(24 * time.Hour)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name string
		st   State
		want string
	}{
		{"created", State{Status: StatusCreated}, "Created"},
		{"failed start", State{Status: StatusCreated, ExitCode: 127, Error: "not found"}, "Created"},
		{"just up", State{Status: StatusRunning, StartedAt: ago(300 * time.Millisecond)}, "Up Less than a second"},
		{"up 1s", State{Status: StatusRunning, StartedAt: ago(time.Second)}, "Up 1 second"},
		{"up 3s", State{Status: StatusRunning, StartedAt: ago(3 * time.Second)}, "Up 3 seconds"},
		{"up 90s", State{Status: StatusRunning, StartedAt: ago(90 * time.Second)}, "Up About a minute"},
		{"up 1h", State{Status: StatusRunning, StartedAt: ago(time.Hour)}, "Up About an hour"},
		{"up 3d", State{Status: StatusRunning, StartedAt: ago(72 * time.Hour)}, "Up 3 days"},
		{"paused", State{Status: StatusPaused, StartedAt: ago(2 * time.Minute)}, "Up 2 minutes (Paused)"},
		{"health starting", State{Status: StatusRunning, StartedAt: ago(3 * time.Second), Health: &containertypes.Health{Status: containertypes.Starting}}, "Up 3 seconds (health: starting)"},
		{"healthy", State{Status: StatusRunning, StartedAt: ago(3 * time.Second), Health: &containertypes.Health{Status: containertypes.Healthy}}, "Up 3 seconds (healthy)"},
		{"unhealthy", State{Status: StatusRunning, StartedAt: ago(3 * time.Second), Health: &containertypes.Health{Status: containertypes.Unhealthy}}, "Up 3 seconds (unhealthy)"},
		{"exited healthy", State{Status: StatusExited, StartedAt: ago(time.Hour), FinishedAt: ago(5 * time.Second), Health: &containertypes.Health{Status: containertypes.Healthy}}, "Exited (0) 5 seconds ago"},
		{"restarting", State{Status: StatusRestarting, ExitCode: 1, StartedAt: ago(time.Hour), FinishedAt: ago(time.Second)}, "Restarting (1) 1 second ago"},
		{"exited 137", State{Status: StatusExited, ExitCode: 137, StartedAt: ago(time.Hour), FinishedAt: ago(5 * time.Second)}, "Exited (137) 5 seconds ago"},
		{"exited 0", State{Status: StatusExited, StartedAt: ago(time.Hour), FinishedAt: ago(2 * time.Minute)}, "Exited (0) 2 minutes ago"},
		{"exited unknown end", State{Status: StatusExited, StartedAt: ago(time.Hour)}, ""},
		{"removing", State{Status: StatusExited, Removing: true, StartedAt: ago(time.Hour), FinishedAt: ago(time.Minute)}, "Removal In Progress"},
		{"removing live", State{Status: StatusRunning, Removing: true, StartedAt: ago(10 * time.Second)}, "Up 10 seconds"},
		{"dead", State{Status: StatusDead, StartedAt: ago(time.Hour)}, "Dead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Describe(now); got != tt.want {
				t.Fatalf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
}
