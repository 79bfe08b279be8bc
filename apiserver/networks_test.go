package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/hutch-engine/hutch/engine"
)

// fakeNetworks records the network calls and answers from fixed data.
type fakeNetworks struct {
	fakeBackend
	calls []string
}

func (f *fakeNetworks) NetworkCreate(_ context.Context, req network.CreateRequest) (network.CreateResponse, error) {
	call := "create " + req.Name + " " + req.Driver
	if req.EnableIPv4 != nil {
		call += fmt.Sprintf(" ipv4=%v", *req.EnableIPv4)
	}
	f.calls = append(f.calls, call)
	if req.Name == "dup" {
		return network.CreateResponse{}, errdefs.ErrConflict.WithMessage("network with name dup already exists")
	}
	return network.CreateResponse{ID: "abc"}, nil
}

func (f *fakeNetworks) NetworkInspect(_ context.Context, ref string) (network.Inspect, error) {
	f.calls = append(f.calls, "inspect "+ref)
	if ref != "n1" {
		return network.Inspect{}, errdefs.ErrNotFound.WithMessage("network " + ref + " not found")
	}
	return network.Inspect{Network: network.Network{Name: "n1", ID: "abc"}, Containers: map[string]network.EndpointResource{}}, nil
}

func (f *fakeNetworks) NetworkList(_ context.Context, filters string) ([]network.Summary, error) {
	f.calls = append(f.calls, "list "+filters)
	return []network.Summary{{Network: network.Network{Name: "bridge"}}}, nil
}

func (f *fakeNetworks) NetworkRemove(_ context.Context, ref string) error {
	f.calls = append(f.calls, "remove "+ref)
	if ref == "bridge" {
		return errdefs.ErrPermissionDenied.WithMessage("bridge is a pre-defined network and cannot be removed")
	}
	return nil
}

func (f *fakeNetworks) NetworkPrune(_ context.Context, filters string) (network.PruneReport, error) {
	f.calls = append(f.calls, "prune "+filters)
	return network.PruneReport{NetworksDeleted: []string{"p1"}}, nil
}

func (f *fakeNetworks) NetworkConnect(_ context.Context, ref string, req network.ConnectRequest) error {
	alias := ""
	if req.EndpointConfig != nil && len(req.EndpointConfig.Aliases) > 0 {
		alias = req.EndpointConfig.Aliases[0]
	}
	f.calls = append(f.calls, "connect "+ref+" "+req.Container+" "+alias)
	return nil
}

func (f *fakeNetworks) NetworkDisconnect(_ context.Context, ref string, req network.DisconnectRequest) error {
	force := ""
	if req.Force {
		force = " force"
	}
	f.calls = append(f.calls, "disconnect "+ref+" "+req.Container+force)
	return nil
}

func TestNetworkRoutes(t *testing.T) {
	checkRoutes(t, func() (Backend, *[]string) {
		f := &fakeNetworks{}
		return f, &f.calls
	}, []routeTest{
		{"POST", "/v1.41/networks/create", `{"Name":"n1","Driver":"bridge"}`, 201, "create n1 bridge", `"Id":"abc"`},
		{"POST", "/networks/create", `{"Name":"dup"}`, 409, "create dup ", "network with name dup already exists"},
		// EnableIPv4 came with API 1.48: ignored before, as Docker does.
		{"POST", "/v1.47/networks/create", `{"Name":"n1","EnableIPv4":false,"EnableIPv6":true}`, 201, "create n1 ", `"Id":"abc"`},
		{"POST", "/v1.48/networks/create", `{"Name":"n1","EnableIPv4":false,"EnableIPv6":true}`, 201, "create n1  ipv4=false", `"Id":"abc"`},
		{"POST", "/networks/create", `{"Name":`, 400, "", "invalid JSON"},
		{"GET", "/networks", "", 200, "list ", `"Name":"bridge"`},
		{"GET", "/v1.41/networks/", "", 200, "list ", `"Name":"bridge"`},
		{"GET", `/networks?filters={"label":{"a":true}}`, "", 200, `list {"label":{"a":true}}`, `"Name":"bridge"`},
		{"GET", "/networks/n1", "", 200, "inspect n1", `"Containers":{}`},
		{"GET", "/networks/nosuch", "", 404, "inspect nosuch", "network nosuch not found"},
		{"GET", "/networks/n1?verbose=true", "", 200, "inspect n1", `"Containers":{}`},
		{"GET", "/networks/n1?verbose=maybe", "", 400, "", "invalid value for verbose: maybe"},
		{"DELETE", "/networks/n1", "", 204, "remove n1", ""},
		{"DELETE", "/networks/bridge", "", 403, "remove bridge", "pre-defined network"},
		{"POST", "/networks/n1/connect", `{"Container":"c1","EndpointConfig":{"Aliases":["a1"]}}`, 200, "connect n1 c1 a1", ""},
		{"POST", "/networks/n1/disconnect", `{"Container":"c1","Force":true}`, 200, "disconnect n1 c1 force", ""},
		{"POST", "/networks/prune", "", 200, "prune ", `"NetworksDeleted":["p1"]`},
	})
}

// routeTest is one request to a route, what the backend fake must have
// been called with first, and what the answer must be.
type routeTest struct {
	method, target, body string
	status               int
	call                 string
	contains             string
}

// checkRoutes sends each request to a server on a new fake and checks the
// answer and the fake's first call.
func checkRoutes(t *testing.T, fake func() (Backend, *[]string), tests []routeTest) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			f, calls := fake()
			s := New(f, Options{Logger: testLogger(t)})
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.status || !strings.Contains(string(body), tc.contains) {
				t.Errorf("%s %s = %d %s, want %d with %q", tc.method, tc.target, rec.Code, body, tc.status, tc.contains)
			}
			call := ""
			if len(*calls) > 0 {
				call = (*calls)[0]
			}
			if call != tc.call {
				t.Errorf("backend call %q, want %q", call, tc.call)
			}
		})
	}
}

// API versions before 1.52 show the default bridge's endpoint at the top
// of NetworkSettings too.
func TestInspectLegacyNetworkSettings(t *testing.T) {
	c := containertypes.InspectResponse{ID: "x", NetworkSettings: &containertypes.NetworkSettings{
		Networks: map[string]*network.EndpointSettings{"bridge": {
			IPAddress: netip.MustParseAddr("172.17.0.2"), Gateway: netip.MustParseAddr("172.17.0.1"), IPPrefixLen: 16,
			MacAddress: network.HardwareAddr{2, 0x42, 172, 17, 0, 2}, EndpointID: "ep",
		}},
	}}
	for _, tc := range []struct {
		version string
		legacy  bool
	}{{"1.41", true}, {"1.51", true}, {"1.52", false}, {"", false}} {
		req := httptest.NewRequest(http.MethodGet, "/containers/x/json", nil)
		if tc.version != "" {
			req = httptest.NewRequest(http.MethodGet, "/v"+tc.version+"/containers/x/json", nil)
			req = req.WithContext(context.WithValue(req.Context(), versionKey{}, tc.version))
		}
		b, err := json.Marshal(inspectForVersion(req, c))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ID              string `json:"Id"`
			NetworkSettings map[string]any
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		ns := got.NetworkSettings
		_, has := ns["IPAddress"]
		if has != tc.legacy || got.ID != "x" || ns["Networks"] == nil {
			t.Errorf("version %q: %s", tc.version, b)
		}
		if tc.legacy && (ns["IPAddress"] != "172.17.0.2" || ns["Gateway"] != "172.17.0.1" || ns["IPPrefixLen"] != 16.0 || ns["MacAddress"] != "02:42:ac:11:00:02" || ns["EndpointID"] != "ep") {
			t.Errorf("version %s legacy fields: %v", tc.version, ns)
		}
	}
}

// gwCreates records the gw-priorities a container create passes on.
type gwCreates struct {
	fakeBackend
	calls []string
}

func (f *gwCreates) ContainerCreate(_ context.Context, req engine.CreateRequest) (containertypes.CreateResponse, error) {
	call := "create"
	if req.NetworkingConfig != nil {
		for name, ep := range req.NetworkingConfig.EndpointsConfig {
			call += fmt.Sprintf(" %s=%d", name, ep.GwPriority)
		}
	}
	f.calls = append(f.calls, call)
	return containertypes.CreateResponse{ID: "c1"}, nil
}

// Endpoints have a gw-priority from API 1.48: Docker drops what older
// clients send.
func TestCreateGwPriorityByVersion(t *testing.T) {
	body := `{"Image":"busybox","NetworkingConfig":{"EndpointsConfig":{"n1":{"GwPriority":7}}}}`
	checkRoutes(t, func() (Backend, *[]string) {
		f := &gwCreates{}
		return f, &f.calls
	}, []routeTest{
		{"POST", "/v1.47/containers/create", body, 201, "create n1=0", `"Id":"c1"`},
		{"POST", "/v1.48/containers/create", body, 201, "create n1=7", `"Id":"c1"`},
	})
}
