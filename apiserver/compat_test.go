package apiserver

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// Docker answers a bad resize with strconv's bare reason, and takes sizes
// up to 32 bits.
func TestTerminalSize(t *testing.T) {
	tests := []struct {
		query  string
		h, w   uint16
		errMsg string
	}{
		{query: "h=40&w=100", h: 40, w: 100},
		{query: "h=70000&w=4294967295", h: 65535, w: 65535},
		{query: "w=100", errMsg: `invalid resize height "": invalid syntax`},
		{query: "h=100", errMsg: `invalid resize width "": invalid syntax`},
		{query: "h=&w=100", errMsg: `invalid resize height "": invalid syntax`},
		{query: "h=not-a-number&w=100", errMsg: `invalid resize height "not-a-number": invalid syntax`},
		{query: "h=100&w=not-a-number", errMsg: `invalid resize width "not-a-number": invalid syntax`},
		{query: "h=-100&w=100", errMsg: `invalid resize height "-100": value out of range`},
		{query: "h=100&w=-100", errMsg: `invalid resize width "-100": value out of range`},
		{query: "h=4294967296&w=100", errMsg: `invalid resize height "4294967296": value out of range`},
		{query: "h=100&w=4294967296", errMsg: `invalid resize width "4294967296": value out of range`},
		{query: "h=%2B5&w=100", errMsg: `invalid resize height "+5": invalid syntax`},
		{query: "h=-&w=100", errMsg: `invalid resize height "-": invalid syntax`},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/containers/c1/resize?"+tc.query, nil)
			h, w, err := terminalSize(r)
			if tc.errMsg == "" {
				if err != nil || h != tc.h || w != tc.w {
					t.Fatalf("got %d×%d, %v; want %d×%d", h, w, err, tc.h, tc.w)
				}
				return
			}
			if err == nil || errorMessage(err) != tc.errMsg || errorStatus(err) != http.StatusBadRequest {
				t.Fatalf("err = %v (%d), want %q (400)", err, errorStatus(err), tc.errMsg)
			}
		})
	}
}

// Container create needs its body: an empty one is the decoder's EOF, as
// Docker words it, whatever its length header says.
func TestDecodeRequiredJSON(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "/containers/create", strings.NewReader(""))
		r.Header.Set("Content-Type", "application/json")
		if chunked {
			r.ContentLength = -1
		}
		var req containertypes.CreateRequest
		err := decodeRequiredJSON(httptest.NewRecorder(), r, &req)
		if err == nil || errorMessage(err) != "invalid JSON: EOF" || !errdefs.IsInvalidArgument(err) {
			t.Errorf("chunked=%v: err = %v, want invalid JSON: EOF", chunked, err)
		}
	}
	// Other requests still take an empty body.
	r := httptest.NewRequest(http.MethodPost, "/containers/c1/update", nil)
	var u containertypes.UpdateConfig
	if err := decodeJSON(httptest.NewRecorder(), r, &u); err != nil {
		t.Errorf("decodeJSON of no body: %v", err)
	}
}

// startRecorder records the containers started.
type startRecorder struct {
	fakeBackend
	started []string
}

func (f *startRecorder) ContainerStart(_ context.Context, ref string) error {
	f.started = append(f.started, ref)
	return nil
}

func (f *startRecorder) ContainerCreate(context.Context, engine.CreateRequest) (containertypes.CreateResponse, error) {
	f.started = append(f.started, "create")
	return containertypes.CreateResponse{ID: "c1"}, nil
}

// Requests that hutch refuses before the engine sees them: statuses and
// messages as Docker's.
func TestRefusedBeforeTheEngine(t *testing.T) {
	f := &startRecorder{}
	_, sock := serveFake(t, f)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	tests := []struct {
		method, path string
		header       map[string]string
		body         string
		status       int
		msg          string
	}{
		{"POST", "/v1.52/containers/missing/start?checkpoint=..%2Foutside", nil, "", 400,
			`invalid checkpoint ID "../outside", only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`},
		{"POST", "/v1.52/containers/missing/start?checkpoint=a.", nil, "", 400,
			`invalid checkpoint ID "a.", only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`},
		{"POST", "/v1.52/containers/c1/start?checkpoint=good", nil, "", 400,
			"checkpoint is only supported in experimental mode, which hutch does not have"},
		{"GET", "/v1.52/containers/c1/checkpoints", nil, "", 501, errNoCheckpoints.Error()},
		{"POST", "/v1.52/containers/c1/checkpoints", nil, `{"CheckpointID":"x"}`, 501, errNoCheckpoints.Error()},
		{"DELETE", "/v1.52/containers/c1/checkpoints/x", nil, "", 501, errNoCheckpoints.Error()},
		{"POST", "/v1.52/session", nil, "", 400, "no upgrade proto in request"},
		{"POST", "/v1.52/session", map[string]string{"Upgrade": "foo", "Connection": "Upgrade"}, "", 400, "protocol foo not supported"},
		{"POST", "/v1.52/containers/create", map[string]string{"Content-Type": "application/json"}, "", 400, "invalid JSON: EOF"},
	}
	for _, tc := range tests {
		req, _ := http.NewRequest(tc.method, "http://hutch"+tc.path, strings.NewReader(tc.body))
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Message string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || body.Message != tc.msg {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, body.Message, tc.status, tc.msg)
		}
	}
	if len(f.started) != 0 {
		t.Errorf("the engine was asked: %v", f.started)
	}
}
