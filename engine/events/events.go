// Package events keeps what happened in the engine as Docker's events
// (GET /events, `docker events`): the last ones for `since`, and a feed of
// new ones to each follower.
//
// A follower that does not keep up (its buffer of events is full) is cut
// off: its feed is closed, and the stream ends, instead of slowing the
// engine down or dropping events in silence.
package events

import (
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/moby/api/types/events"
)

const (
	// keep is how many past events are kept for `since`, as many as
	// Docker keeps: some 600 bytes each, a ring of 1024 held 0.6 MB more
	// of an idle engine's heap once a few bursts of containers had
	// filled it.
	keep = 256
	// feed is how many events a follower may have unread.
	feed = 1024
)

// Log is the engine's events.
type Log struct {
	mu        sync.Mutex
	past      []events.Message // a ring of at most keep, from past[oldest]
	oldest    int
	followers map[chan events.Message]struct{}
	now       func() time.Time
}

// New returns an empty Log.
func New() *Log {
	return &Log{followers: map[chan events.Message]struct{}{}, now: time.Now}
}

// Publish records m, stamped with the time and the local scope, and hands
// it to the followers. A nil Log (an engine made bare, in tests) drops it.
func (l *Log) Publish(typ events.Type, action events.Action, id string, attrs map[string]string) {
	if l == nil {
		return
	}
	t := l.now()
	m := events.Message{
		Type: typ, Action: action, Actor: events.Actor{ID: id, Attributes: attrs},
		Scope: "local", Time: t.Unix(), TimeNano: t.UnixNano(),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.past) < keep {
		l.past = append(l.past, m)
	} else {
		l.past[l.oldest] = m
		l.oldest = (l.oldest + 1) % keep
	}
	for ch := range l.followers {
		select {
		case ch <- m:
		default:
			delete(l.followers, ch)
			close(ch)
		}
	}
}

// Follow returns the kept events at or after since (none for the zero
// time), and a feed of the events published from now on, closed by stop
// or when the follower falls behind.
func (l *Log) Follow(since time.Time) (past []events.Message, next <-chan events.Message, stop func()) {
	ch := make(chan events.Message, feed)
	l.mu.Lock()
	defer l.mu.Unlock()
	if !since.IsZero() {
		for i := range l.past {
			if m := l.past[(l.oldest+i)%len(l.past)]; m.TimeNano >= since.UnixNano() {
				past = append(past, m)
			}
		}
	}
	l.followers[ch] = struct{}{}
	return past, ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.followers[ch]; ok {
			delete(l.followers, ch)
			close(ch)
		}
	}
}

// FilterKeys are the filters of GET /events.
var FilterKeys = map[string]bool{
	"config": true, "container": true, "daemon": true, "event": true, "image": true, "label": true,
	"network": true, "node": true, "plugin": true, "scope": true, "secret": true, "service": true,
	"type": true, "volume": true,
}

// Match reports whether m passes the filters f, as Docker's: every key
// given must match one of its values.
func Match(f container.Filters, m events.Message) bool {
	match := func(key string, ok func(v string) bool) bool {
		vs := f.Values(key)
		if len(vs) == 0 {
			return true
		}
		for _, v := range vs {
			if ok(v) {
				return true
			}
		}
		return false
	}
	// Docker's fuzzy match of the actor: its ID, a prefix of it, or its
	// name (whatever its type: the ID of a container matches a container
	// filter, nothing else does in practice).
	actor := func(v string) bool {
		return m.Actor.ID == v || strings.HasPrefix(m.Actor.ID, v) || m.Actor.Attributes["name"] == v
	}
	return match("type", func(v string) bool { return string(m.Type) == v }) &&
		match("event", func(v string) bool {
			// exec_create: <command> matches exec_create.
			a, _, _ := strings.Cut(string(m.Action), ":")
			return string(m.Action) == v || a == v
		}) &&
		match("scope", func(v string) bool { return v == m.Scope }) &&
		match("container", actor) &&
		match("network", actor) &&
		match("volume", actor) &&
		match("daemon", actor) &&
		match("image", func(v string) bool { return matchImage(m, v) }) &&
		container.MatchLabels(f.Values("label"), m.Actor.Attributes) &&
		!swarmOnly(f)
}

// matchImage is Docker's image filter: the ID or the image's name (of a
// container event, the image it runs), with or without their tags.
func matchImage(m events.Message, v string) bool {
	name := m.Actor.Attributes["image"]
	if m.Type == events.ImageEventType {
		name = m.Actor.Attributes["name"]
	}
	for _, s := range []string{m.Actor.ID, name} {
		if s != "" && (s == v || familiar(s) == v) {
			return true
		}
	}
	return false
}

// familiar is ref without its tag or digest, as the user writes it
// ("busybox" for docker.io/library/busybox:latest).
func familiar(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.FamiliarName(named)
}

// swarmOnly: filters on swarm's objects, which hutch has none of, match
// nothing.
func swarmOnly(f container.Filters) bool {
	for _, k := range []string{"config", "node", "plugin", "secret", "service"} {
		if len(f.Values(k)) > 0 {
			return true
		}
	}
	return false
}
