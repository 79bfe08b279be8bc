package events

import (
	"testing"
	"time"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/events"
)

// clock gives each Publish the next second.
func clocked() *Log {
	l := New()
	t := time.Unix(1000, 0)
	l.now = func() time.Time { t = t.Add(time.Second); return t }
	return l
}

func TestFollow(t *testing.T) {
	l := clocked()
	l.Publish(events.ContainerEventType, events.ActionCreate, "c1", nil) // t=1001
	l.Publish(events.ContainerEventType, events.ActionStart, "c1", nil)  // t=1002
	past, next, stop := l.Follow(time.Unix(1002, 0))
	if len(past) != 1 || past[0].Action != events.ActionStart || past[0].Scope != "local" || past[0].Time != 1002 || past[0].TimeNano != 1002e9 {
		t.Fatalf("past since 1002 = %+v", past)
	}
	if past, _, stop := l.Follow(time.Time{}); len(past) != 0 {
		t.Errorf("past without since = %+v", past)
	} else {
		stop()
	}
	l.Publish(events.ContainerEventType, events.ActionDie, "c1", map[string]string{"exitCode": "0"})
	if m := <-next; m.Action != events.ActionDie || m.Actor.Attributes["exitCode"] != "0" {
		t.Errorf("next = %+v", m)
	}
	stop()
	stop() // twice is fine
	if _, ok := <-next; ok {
		t.Error("feed open after stop")
	}
	l.Publish(events.ContainerEventType, events.ActionDestroy, "c1", nil) // no follower: no block
}

func TestKeep(t *testing.T) {
	l := clocked()
	for range keep + 10 {
		l.Publish(events.ImageEventType, events.ActionPull, "busybox", nil)
	}
	past, _, stop := l.Follow(time.Unix(1, 0))
	defer stop()
	if len(past) != keep || past[0].Time != 1011 || past[keep-1].Time != 1000+keep+10 {
		t.Errorf("kept %d, from %d to %d", len(past), past[0].Time, past[len(past)-1].Time)
	}
}

// A follower that reads nothing is cut off once its feed is full; the
// others go on.
func TestSlowFollower(t *testing.T) {
	l := clocked()
	_, slow, stopSlow := l.Follow(time.Time{})
	defer stopSlow()
	_, fast, stopFast := l.Follow(time.Time{})
	defer stopFast()
	for i := range feed + 1 {
		l.Publish(events.ContainerEventType, events.ActionStart, "c", nil)
		if i < feed {
			<-fast
		}
	}
	n := 0
	for range slow {
		n++
	}
	if n != feed {
		t.Errorf("slow follower read %d before its feed closed, want %d", n, feed)
	}
	if m, ok := <-fast; !ok || m.Action != events.ActionStart {
		t.Errorf("fast follower: %+v, %v", m, ok)
	}
}

func TestMatch(t *testing.T) {
	ctr := events.Message{Type: events.ContainerEventType, Action: events.ActionStart, Scope: "local",
		Actor: events.Actor{ID: "abcdef0123", Attributes: map[string]string{"name": "web", "image": "busybox:latest", "app": "x"}}}
	exec := events.Message{Type: events.ContainerEventType, Action: "exec_create: sh -c true", Scope: "local",
		Actor: events.Actor{ID: "abcdef0123", Attributes: map[string]string{"name": "web"}}}
	img := events.Message{Type: events.ImageEventType, Action: events.ActionTag, Scope: "local",
		Actor: events.Actor{ID: "sha256:1234", Attributes: map[string]string{"name": "localhost:5000/app:v1"}}}
	tests := []struct {
		filters string
		m       events.Message
		want    bool
	}{
		{``, ctr, true},
		{`{"type":{"container":true}}`, ctr, true},
		{`{"type":{"image":true}}`, ctr, false},
		{`{"type":{"image":true,"container":true}}`, img, true},
		{`{"event":{"start":true}}`, ctr, true},
		{`{"event":{"die":true}}`, ctr, false},
		{`{"event":{"exec_create":true}}`, exec, true},
		{`{"container":{"web":true}}`, ctr, true},
		{`{"container":{"abc":true}}`, ctr, true},
		{`{"container":{"db":true}}`, ctr, false},
		{`{"container":{"web":true}}`, img, false},
		{`{"image":{"busybox":true}}`, ctr, true},
		{`{"image":{"busybox:latest":true}}`, ctr, true},
		{`{"image":{"alpine":true}}`, ctr, false},
		{`{"image":{"localhost:5000/app":true}}`, img, true},
		{`{"image":{"sha256:1234":true}}`, img, true},
		{`{"label":{"app=x":true}}`, ctr, true},
		{`{"label":{"app=y":true}}`, ctr, false},
		{`{"label":{"app":true},"event":{"start":true,"die":true}}`, ctr, true},
		{`{"scope":{"swarm":true}}`, ctr, false},
		{`{"service":{"s":true}}`, ctr, false},
	}
	for _, tt := range tests {
		f, err := container.ParseFilters(tt.filters)
		if err != nil {
			t.Fatal(err)
		}
		if got := Match(f, tt.m); got != tt.want {
			t.Errorf("Match(%s, %s %s) = %v, want %v", tt.filters, tt.m.Type, tt.m.Action, got, tt.want)
		}
	}
}
