package apiserver

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/common"
	"github.com/moby/moby/client"
)

const (
	notManagerMsg = `This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.`
	noSwarmMsg    = "This node is not part of a swarm"
	noSwarmMode   = "swarm mode is not available: hutch-swarm was not found beside the hutch binary or on PATH"
	noPluginsMsg  = "hutch does not support plugins"
)

// TestSwarmAndPlugins checks every swarm and plugin route against what
// dockerd answers outside a swarm with no plugin installed.
func TestSwarmAndPlugins(t *testing.T) {
	tests := []struct {
		method, target string
		status         int
		message        string // the JSON error's message; "" for a success
		body           string // the exact body of a success
	}{
		{"POST", "/v1.41/swarm/init", 501, noSwarmMode, ""},
		{"POST", "/swarm/join", 501, noSwarmMode, ""},
		{"POST", "/swarm/leave?force=1", 503, noSwarmMsg, ""},
		{"GET", "/v1.24/swarm", 503, notManagerMsg, ""},
		{"GET", "/swarm/unlockkey", 503, notManagerMsg, ""},
		{"POST", "/swarm/update?version=1", 503, notManagerMsg, ""},
		{"POST", "/swarm/unlock", 503, notManagerMsg, ""},
		{"GET", "/v1.41/services", 503, notManagerMsg, ""},
		{"GET", "/services/web", 503, notManagerMsg, ""},
		{"POST", "/services/create", 503, notManagerMsg, ""},
		{"POST", "/services/web/update?version=3", 503, notManagerMsg, ""},
		{"DELETE", "/services/web", 503, notManagerMsg, ""},
		{"GET", "/services/web/logs?stdout=1", 503, notManagerMsg, ""},
		{"GET", "/nodes", 503, notManagerMsg, ""},
		{"GET", "/nodes/self", 503, notManagerMsg, ""},
		{"DELETE", "/nodes/n1", 503, notManagerMsg, ""},
		{"POST", "/nodes/n1/update?version=1", 503, notManagerMsg, ""},
		{"GET", "/tasks", 503, notManagerMsg, ""},
		{"GET", "/tasks/t1", 503, notManagerMsg, ""},
		{"GET", "/tasks/t1/logs", 503, notManagerMsg, ""},
		{"GET", "/v1.25/secrets", 503, notManagerMsg, ""},
		{"POST", "/secrets/create", 503, notManagerMsg, ""},
		{"GET", "/secrets/s1", 503, notManagerMsg, ""},
		{"DELETE", "/secrets/s1", 503, notManagerMsg, ""},
		{"POST", "/secrets/s1/update", 503, notManagerMsg, ""},
		{"GET", "/v1.30/configs", 503, notManagerMsg, ""},
		{"POST", "/configs/create", 503, notManagerMsg, ""},
		{"GET", "/configs/c1", 503, notManagerMsg, ""},
		{"DELETE", "/configs/c1", 503, notManagerMsg, ""},
		{"POST", "/configs/c1/update", 503, notManagerMsg, ""},
		// Routes newer than the request's version, with dockerd's message.
		{"GET", "/v1.24/secrets", 400, "GET /secrets requires minimum API version 1.25", ""},
		{"DELETE", "/v1.24/secrets/s1", 400, "DELETE /secrets/{id} requires minimum API version 1.25", ""},
		{"GET", "/v1.29/configs/c1", 400, "GET /configs/{id} requires minimum API version 1.30", ""},
		// Paths and methods dockerd has no swarm route for.
		{"PUT", "/services/web", 404, "page not found", ""},
		{"GET", "/services/web/tasks", 404, "page not found", ""},
		{"POST", "/swarm", 404, "page not found", ""},
		{"HEAD", "/swarm", 404, "page not found", ""},

		{"GET", "/plugins", 200, "", "[]\n"},
		{"GET", "/v1.41/plugins?filters=" + url.QueryEscape(`{"enabled":{"true":true},"capability":{"volumedriver":true}}`), 200, "", "[]\n"},
		{"GET", "/plugins?filters=" + url.QueryEscape(`{"enabled":["0"]}`), 200, "", "[]\n"},
		{"GET", "/plugins?filters=" + url.QueryEscape(`{"enable":{"true":true}}`), 400, "invalid filter 'enable'", ""},
		{"GET", "/plugins?filters=" + url.QueryEscape(`{"x":{"a":true},"enabled":{"true":true}}`), 400, "invalid filter 'x'", ""},
		{"GET", "/plugins?filters=" + url.QueryEscape(`{"enabled":{"yes":true}}`), 400, "invalid filter 'enabled=[yes]'", ""},
		{"GET", "/plugins?filters=" + url.QueryEscape(`{"enabled":{"true":true,"false":true}}`), 400, "invalid filter 'enabled=[false true]'", ""},
		{"GET", "/plugins/nosuch/json", 404, `plugin "nosuch" not found`, ""},
		{"GET", "/v1.41/plugins/vieux/sshfs:latest/json", 404, `plugin "vieux/sshfs:latest" not found`, ""},
		{"GET", "/plugins/vieux%2Fsshfs/json", 404, `plugin "vieux/sshfs" not found`, ""},
		{"DELETE", "/plugins/vieux/sshfs:latest?force=1", 404, `plugin "vieux/sshfs:latest" not found`, ""},
		{"POST", "/plugins/vieux/sshfs:latest/enable?timeout=30", 404, `plugin "vieux/sshfs:latest" not found`, ""},
		{"POST", "/plugins/p/enable", 400, `strconv.Atoi: parsing "": invalid syntax`, ""},
		{"POST", "/plugins/p/disable", 404, `plugin "p" not found`, ""},
		{"POST", "/plugins/p/push", 404, `plugin "p" not found`, ""},
		{"POST", "/plugins/p/set", 404, `plugin "p" not found`, ""},
		{"POST", "/plugins/p/upgrade?remote=p", 404, `plugin "p" not found`, ""},
		{"POST", "/v1.25/plugins/p/upgrade", 400, "POST /plugins/{name:.*}/upgrade requires minimum API version 1.26", ""},
		{"GET", "/plugins/privileges?remote=vieux/sshfs", 501, noPluginsMsg, ""},
		{"POST", "/plugins/pull?remote=vieux/sshfs", 501, noPluginsMsg, ""},
		{"POST", "/plugins/create?name=p", 501, noPluginsMsg, ""},
		{"GET", "/plugins/p/config", 404, "page not found", ""},
		{"GET", "/plugins/p", 404, "page not found", ""},
		{"POST", "/plugins/p/json", 404, "page not found", ""},
		{"PUT", "/plugins", 404, "page not found", ""},
	}
	s := New(&fakeBackend{}, Options{Logger: testLogger(t)})
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d; body %q", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tc.message == "" {
				if rec.Body.String() != tc.body {
					t.Errorf("body = %q, want %q", rec.Body, tc.body)
				}
				return
			}
			var e common.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("error body %q: %v", rec.Body, err)
			}
			if e.Message != tc.message {
				t.Errorf("message = %q, want %q", e.Message, tc.message)
			}
		})
	}
}

// TestSwarmAndPluginsSDK checks that the Go SDK classes our answers as it
// classes dockerd's.
func TestSwarmAndPluginsSDK(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hutch.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(&fakeBackend{}, Options{}).Handler()}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	cli, err := client.New(client.WithHost("unix://" + sock))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := t.Context()

	if _, err := cli.SwarmInspect(ctx, client.SwarmInspectOptions{}); !errdefs.IsUnavailable(err) {
		t.Errorf("SwarmInspect: %v, want Unavailable", err)
	}
	if _, err := cli.ServiceList(ctx, client.ServiceListOptions{}); !errdefs.IsUnavailable(err) {
		t.Errorf("ServiceList: %v, want Unavailable", err)
	}
	if _, err := cli.SwarmLeave(ctx, client.SwarmLeaveOptions{}); !errdefs.IsUnavailable(err) {
		t.Errorf("SwarmLeave: %v, want Unavailable", err)
	}
	if _, err := cli.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: "127.0.0.1:2377"}); !errdefs.IsNotImplemented(err) {
		t.Errorf("SwarmInit: %v, want NotImplemented", err)
	}
	list, err := cli.PluginList(ctx, client.PluginListOptions{Filters: make(client.Filters).Add("capability", "volumedriver")})
	if err != nil || list.Items == nil || len(list.Items) != 0 {
		t.Errorf("PluginList = %#v, %v; want an empty list", list.Items, err)
	}
	if _, err := cli.PluginInspect(ctx, "vieux/sshfs:latest", client.PluginInspectOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("PluginInspect: %v, want NotFound", err)
	}
}
