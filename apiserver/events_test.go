package apiserver

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/events"

	"github.com/hutch-engine/hutch/engine"
)

// fakeEvents sends two events, or refuses a bad filter before it begins.
type fakeEvents struct {
	fakeBackend
	req engine.EventsRequest
}

func (f *fakeEvents) Events(_ context.Context, req engine.EventsRequest, begin func(), send func(events.Message) error) error {
	f.req = req
	if req.Filters == "bad" {
		return errdefs.ErrInvalidArgument.WithMessage("invalid filter 'bad'")
	}
	begin()
	send(events.Message{Type: events.ContainerEventType, Action: events.ActionStart, Scope: "local", Time: 7,
		Actor: events.Actor{ID: "c1", Attributes: map[string]string{"image": "busybox", "name": "web"}}})
	send(events.Message{Type: events.NetworkEventType, Action: events.ActionCreate, Scope: "local", Actor: events.Actor{ID: "n1"}})
	return io.ErrClosedPipe // after begin: the stream just ends
}

func TestEvents(t *testing.T) {
	const start = `{"Type":"container","Action":"start","Actor":{"ID":"c1","Attributes":{"image":"busybox","name":"web"}},"scope":"local","time":7}`
	const create = `{"Type":"network","Action":"create","Actor":{"ID":"n1","Attributes":null},"scope":"local"}`
	for _, tc := range []struct {
		target, accept, want, contentType string
		status                            int
	}{
		{"/v1.52/events?since=5&until=9", "", start + "\n" + create + "\n", "application/jsonl", 200},
		// Before 1.52, container and image events have status, id and
		// from, and the stream calls itself JSON.
		{"/v1.51/events", "", `{"status":"start","id":"c1","from":"busybox","Type":"container","Action":"start","Actor":{"ID":"c1","Attributes":{"image":"busybox","name":"web"}},"scope":"local","time":7}
` + create + "\n", "application/json", 200},
		// A JSON text sequence (RFC 7464) when asked for by name.
		{"/v1.56/events", "application/json-seq", "\x1e" + start + "\n\x1e" + create + "\n", "application/json-seq", 200},
		{"/v1.56/events", "application/x-ndjson", start + "\n" + create + "\n", "application/x-ndjson", 200},
		{"/v1.56/events", "*/*", start + "\n" + create + "\n", "application/jsonl", 200},
		{"/events?filters=bad", "", `{"message":"invalid filter 'bad'"}`, "", 400},
	} {
		f := &fakeEvents{}
		s := New(f, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tc.target, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.status || strings.TrimSpace(rec.Body.String()) != strings.TrimSpace(tc.want) {
			t.Errorf("GET %s (Accept %s) = %d\n%q\nwant %d\n%q", tc.target, tc.accept, rec.Code, rec.Body, tc.status, tc.want)
		}
		if tc.status == 200 && rec.Header().Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s (Accept %s): Content-Type %q, want %q", tc.target, tc.accept, rec.Header().Get("Content-Type"), tc.contentType)
		}
	}
}
