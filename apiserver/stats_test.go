package apiserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// fakeStats sends two samples with a stream, one without.
type fakeStats struct {
	fakeBackend
	req engine.StatsRequest
}

func (f *fakeStats) ContainerStats(_ context.Context, ref string, req engine.StatsRequest, send func(containertypes.StatsResponse) error) error {
	f.req = req
	if ref != "c1" {
		return errdefs.ErrNotFound.WithMessage("No such container: " + ref)
	}
	n := 1
	if req.Stream {
		n = 2
	}
	for range n {
		send(containertypes.StatsResponse{ID: "c1", PidsStats: containertypes.PidsStats{Current: 3}})
	}
	return nil
}

func TestContainerStats(t *testing.T) {
	for _, tc := range []struct {
		target string
		status int
		lines  int
		req    engine.StatsRequest
		want   string
	}{
		{"/containers/c1/stats", 200, 2, engine.StatsRequest{Stream: true}, `"pids_stats":{"current":3}`},
		{"/containers/c1/stats?stream=0", 200, 1, engine.StatsRequest{}, `"id":"c1"`},
		{"/containers/c1/stats?stream=false&one-shot=true", 200, 1, engine.StatsRequest{OneShot: true}, `"id":"c1"`},
		{"/containers/nope/stats?stream=0", 404, 1, engine.StatsRequest{}, `{"message":"No such container: nope"}`},
	} {
		f := &fakeStats{}
		s := New(f, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
		body := strings.TrimSpace(rec.Body.String())
		if rec.Code != tc.status || len(strings.Split(body, "\n")) != tc.lines || !strings.Contains(body, tc.want) || f.req != tc.req {
			t.Errorf("GET %s = %d %s (request %+v); want %d, %d lines with %s (request %+v)", tc.target, rec.Code, body, f.req, tc.status, tc.lines, tc.want, tc.req)
		}
	}
}
