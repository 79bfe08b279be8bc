//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// GET /events negotiates its stream as Docker 29 does: JSON lines by
// default from API 1.52, a JSON text sequence (RFC 7464) or NDJSON when
// the client names one in Accept, plain "application/json" before 1.52.
func TestEventsStreamTypes(t *testing.T) {
	d, ref := pulled(t)
	since := time.Now().Add(-time.Second).Unix()
	must(t, d, "create", "--name", "evtypes", ref, "true")
	until := time.Now().Add(time.Second).Unix()
	path := fmt.Sprintf("/v%%s/events?since=%d&until=%d&filters=%%7B%%22container%%22%%3A%%5B%%22evtypes%%22%%5D%%7D", since, until)
	hc := unixHTTPClient(d.Socket)
	for _, tc := range []struct {
		version, accept, contentType, prefix string
	}{
		{"1.56", "", "application/jsonl", "{"},
		{"1.56", "application/json-seq", "application/json-seq", "\x1e{"},
		{"1.56", "application/x-ndjson;q=0.9, application/json-seq;q=0.5", "application/x-ndjson", "{"},
		{"1.51", "", "application/json", "{"},
	} {
		req, err := http.NewRequest("GET", "http://hutch"+fmt.Sprintf(path, tc.version), nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("v%s Accept %q: %d %q, want 200 %q", tc.version, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.contentType)
		}
		if !strings.HasPrefix(string(body), tc.prefix) || !strings.Contains(string(body), `"Action":"create"`) {
			t.Errorf("v%s Accept %q: body %q", tc.version, tc.accept, body)
		}
	}
	// The Go SDK asks for JSON lines first and reads what it gets.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := d.Client(t).Events(ctx, client.EventsListOptions{Since: fmt.Sprint(since), Until: fmt.Sprint(until)})
	var got []events.Message
	for {
		select {
		case m := <-res.Messages:
			got = append(got, m)
			continue
		case err := <-res.Err:
			if err != nil && err != io.EOF {
				t.Fatalf("events: %v", err)
			}
		}
		break
	}
	found := false
	for _, m := range got {
		found = found || (m.Action == events.ActionCreate && m.Actor.Attributes["name"] == "evtypes")
	}
	if !found {
		t.Errorf("the SDK's events lack the create of evtypes: %+v", got)
	}
}
