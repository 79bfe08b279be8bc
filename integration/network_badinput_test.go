//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Bad input on the network endpoints and on the network part of container
// create: each gets a Docker-shaped 4xx with Docker's status (or a 4xx
// where Docker answers 500), and nothing changes: no network half-made, no
// container created, no endpoint added or lost.
func TestBadInputNetworks(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "--subnet", "10.201.0.0/24", "--label", "keep=1", "good")
	dockerOK(t, d, "create", "--name", "bi", ref, "true")
	before := networkState(t, d)

	huge := `{"Name":"big","Labels":{"a":"` + strings.Repeat("x", 5<<20) + `"}}`
	q := url.QueryEscape
	type req struct {
		name, method, path, body string
		code                     int
		msg                      string
	}
	tests := []req{
		// POST /networks/create
		{"create malformed", "POST", "/networks/create", `{"Name":`, 400, "invalid JSON"},
		{"create name not a string", "POST", "/networks/create", `{"Name":5}`, 400, "invalid JSON"},
		{"create IPAM config not a list", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":"a"}}`, 400, "invalid JSON"},
		{"create labels not a map", "POST", "/networks/create", `{"Name":"x","Labels":["a"]}`, 400, "invalid JSON"},
		{"create trailing data", "POST", "/networks/create", `{"Name":"x"} {"Name":"y"}`, 400, "unexpected content after JSON"},
		{"create empty name", "POST", "/networks/create", `{"Name":" "}`, 400, "name"},
		{"create traversal name", "POST", "/networks/create", `{"Name":"../../etc"}`, 400, "invalid network name"},
		{"create name with slash", "POST", "/networks/create", `{"Name":"a/b"}`, 400, "invalid network name"},
		{"create name with NUL", "POST", "/networks/create", `{"Name":"a\u0000b"}`, 400, "invalid network name"},
		{"create predefined bridge", "POST", "/networks/create", `{"Name":"bridge"}`, 403, "operation is not permitted on predefined bridge network"},
		{"create predefined host", "POST", "/networks/create", `{"Name":"host"}`, 403, "operation is not permitted on predefined host network"},
		{"create predefined none", "POST", "/networks/create", `{"Name":"none"}`, 403, "operation is not permitted on predefined none network"},
		{"create predefined default", "POST", "/networks/create", `{"Name":"default"}`, 403, "operation is not permitted on predefined default network"},
		{"create duplicate name", "POST", "/networks/create", `{"Name":"good"}`, 409, "network with name good already exists"},
		{"create host driver", "POST", "/networks/create", `{"Name":"x","Driver":"host"}`, 403, `only one instance of "host" network is allowed`},
		{"create subnet not an address", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"300.1.2.0/24"}]}}`, 400, "invalid JSON"},
		{"create subnet without length", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0"}]}}`, 400, "invalid JSON"},
		{"create subnet with host bits", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.1/24"}]}}`, 400, "invalid subnet"},
		{"create subnet too small", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0/31"}]}}`, 400, "invalid subnet"},
		{"create gateway outside subnet", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0/24","Gateway":"10.203.0.1"}]}}`, 400, "invalid gateway"},
		{"create gateway is the network address", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0/24","Gateway":"10.202.0.0"}]}}`, 400, "invalid gateway"},
		{"create gateway not an address", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0/24","Gateway":"gw"}]}}`, 400, "invalid JSON"},
		{"create gateway without subnet", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Gateway":"10.202.0.1"}]}}`, 400, "needs a subnet"},
		{"create ip-range outside subnet", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.202.0.0/24","IPRange":"10.203.0.0/25"}]}}`, 400, "invalid ip-range"},
		{"create subnet overlapping a network", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"10.201.0.0/16"}]}}`, 403, "Pool overlaps with other one on this address space"},
		{"create subnet overlapping the default bridge", "POST", "/networks/create", `{"Name":"x","IPAM":{"Config":[{"Subnet":"172.17.5.0/24"}]}}`, 403, "Pool overlaps"},
		{"create oversized body", "POST", "/networks/create", huge, 400, "request body larger than"},

		// GET /networks, GET/DELETE /networks/{id}
		{"list bad filters JSON", "GET", "/networks?filters=" + q(`{"name":`), "", 400, "invalid filter"},
		{"list unknown filter", "GET", "/networks?filters=" + q(`{"nope":{"x":true}}`), "", 400, "invalid filter 'nope'"},
		{"list bad type filter", "GET", "/networks?filters=" + q(`{"type":{"weird":true}}`), "", 400, "invalid filter: 'type'='weird'"},
		{"list bad dangling filter", "GET", "/networks?filters=" + q(`{"dangling":{"maybe":true}}`), "", 400, "dangling"},
		{"inspect unknown", "GET", "/networks/nosuch", "", 404, "network nosuch not found"},
		{"inspect traversal", "GET", "/networks/..%2F..%2Fetc", "", 404, "network ../../etc not found"},
		{"inspect bad verbose", "GET", "/networks/good?verbose=maybe", "", 400, "invalid value for verbose: maybe"},
		{"remove unknown", "DELETE", "/networks/nosuch", "", 404, "network nosuch not found"},
		{"remove traversal", "DELETE", "/networks/..%2F..%2Fetc", "", 404, "not found"},
		{"remove predefined", "DELETE", "/networks/bridge", "", 403, "bridge is a pre-defined network and cannot be removed"},
		{"remove predefined host", "DELETE", "/networks/host", "", 403, "pre-defined network"},

		// POST /networks/{id}/connect and disconnect
		{"connect malformed", "POST", "/networks/good/connect", `{"Container":`, 400, "invalid JSON"},
		{"connect container not a string", "POST", "/networks/good/connect", `{"Container":5}`, 400, "invalid JSON"},
		{"connect no container", "POST", "/networks/good/connect", `{}`, 400, "invalid name or ID supplied"},
		{"connect unknown network", "POST", "/networks/nosuch/connect", `{"Container":"bi"}`, 404, "network nosuch not found"},
		{"connect traversal network", "POST", "/networks/..%2F..%2Fetc/connect", `{"Container":"bi"}`, 404, "not found"},
		{"connect unknown container", "POST", "/networks/good/connect", `{"Container":"nosuch"}`, 404, "No such container: nosuch"},
		{"connect traversal container", "POST", "/networks/good/connect", `{"Container":"../../etc"}`, 404, "No such container"},
		{"connect twice", "POST", "/networks/bridge/connect", `{"Container":"bi"}`, 403, "endpoint with name bi already exists in network bridge"},
		{"connect to host", "POST", "/networks/host/connect", `{"Container":"bi"}`, 400, "connected to host network"},
		{"connect bad address", "POST", "/networks/good/connect", `{"Container":"bi","EndpointConfig":{"IPAMConfig":{"IPv4Address":"nope"}}}`, 400, "invalid JSON"},
		{"connect address outside the subnet", "POST", "/networks/good/connect", `{"Container":"bi","EndpointConfig":{"IPAMConfig":{"IPv4Address":"10.9.9.9"}}}`, 400, "no configured subnet or ip-range contain the IP address 10.9.9.9"},
		{"connect address on the default bridge", "POST", "/networks/bridge/connect", `{"Container":"bi","EndpointConfig":{"IPAMConfig":{"IPv4Address":"172.17.0.9"}}}`, 400, "user specified IP address is supported on user defined networks only"},
		{"connect oversized body", "POST", "/networks/good/connect", `{"Container":"bi","EndpointConfig":{"Aliases":["` + strings.Repeat("x", 5<<20) + `"]}}`, 400, "request body larger than"},
		{"disconnect malformed", "POST", "/networks/bridge/disconnect", `{"Container":`, 400, "invalid JSON"},
		{"disconnect unknown network", "POST", "/networks/nosuch/disconnect", `{"Container":"bi"}`, 404, "network nosuch not found"},
		{"disconnect unknown container", "POST", "/networks/bridge/disconnect", `{"Container":"nosuch"}`, 404, "No such container: nosuch"},
		{"disconnect not connected", "POST", "/networks/good/disconnect", `{"Container":"bi"}`, 400, "is not connected to network good"},

		// POST /networks/prune
		{"prune bad filters JSON", "POST", "/networks/prune?filters=" + q(`{bad`), "", 400, "invalid filter"},
		{"prune unknown filter", "POST", "/networks/prune?filters=" + q(`{"name":{"good":true}}`), "", 400, "invalid filter 'name'"},
		{"prune bad until", "POST", "/networks/prune?filters=" + q(`{"until":{"yesterday-ish":true}}`), "", 400, `failed to parse value as time or duration: "yesterday-ish"`},

		// The network part of POST /containers/create (a network that does
		// not exist yet is the start's error, as in Docker: TestCreateNetworksLater)
		{"create container with endpoints not a map", "POST", "/containers/create", `{"Image":"` + ref + `","NetworkingConfig":{"EndpointsConfig":["good"]}}`, 400, "invalid JSON"},
		{"create container with bad endpoint address", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"good"},"NetworkingConfig":{"EndpointsConfig":{"good":{"IPAMConfig":{"IPv4Address":"1.2.3"}}}}}`, 400, "invalid JSON"},
		{"create container with address outside the subnet", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"good"},"NetworkingConfig":{"EndpointsConfig":{"good":{"IPAMConfig":{"IPv4Address":"10.9.9.9"}}}}}`, 400, "no configured subnet or ip-range contain the IP address 10.9.9.9"},
		{"create container with address on the default bridge", "POST", "/containers/create", `{"Image":"` + ref + `","NetworkingConfig":{"EndpointsConfig":{"bridge":{"IPAMConfig":{"IPv4Address":"172.17.0.9"}}}}}`, 400, "user specified IP address is supported on user defined networks only"},
		{"create container with alias on the default bridge", "POST", "/containers/create", `{"Image":"` + ref + `","NetworkingConfig":{"EndpointsConfig":{"bridge":{"Aliases":["a"]}}}}`, 400, "network-scoped alias is supported only for containers in user defined networks"},
		{"create container on host with endpoints", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"host"},"NetworkingConfig":{"EndpointsConfig":{"good":{}}}}`, 400, "Container cannot be connected to network endpoints"},
		{"create container joining an unknown container", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"NetworkMode":"container:nosuch"}}`, 404, "No such container: nosuch"},
		{"create container with bad host port", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":{"80/tcp":[{"HostPort":"notaport"}]}}}`, 400, "notaport"},
		{"create container with host port out of range", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":{"80/tcp":[{"HostPort":"70000"}]}}}`, 400, "70000"},
		{"create container with reversed host port range", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":{"80/tcp":[{"HostPort":"9000-8000"}]}}}`, 400, "9000-8000"},
		{"create container with bad container port", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":{"http/tcp":[{"HostPort":"8080"}]}}}`, 400, "invalid JSON"},
		{"create container with bad host IP", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":{"80/tcp":[{"HostIp":"localhost","HostPort":"8080"}]}}}`, 400, "invalid JSON"},
		{"create container with port bindings not a map", "POST", "/containers/create", `{"Image":"` + ref + `","HostConfig":{"PortBindings":["80:80"]}}`, 400, "invalid JSON"},
		{"create container exposing port 0", "POST", "/containers/create", `{"Image":"` + ref + `","ExposedPorts":{"0/tcp":{}}}`, 400, "a container port cannot be 0"},
		{"create container exposing a port out of range", "POST", "/containers/create", `{"Image":"` + ref + `","ExposedPorts":{"99999/tcp":{}}}`, 400, "invalid JSON"},
		{"create container with exposed ports a list", "POST", "/containers/create", `{"Image":"` + ref + `","ExposedPorts":["80/tcp"]}`, 400, "invalid JSON"},
		{"create container with networking config not an object", "POST", "/containers/create", `{"Image":"` + ref + `","NetworkingConfig":"good"}`, 400, "invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr map[string]string
			var body io.Reader
			if tc.body != "" {
				hdr = map[string]string{"Content-Type": "application/json"}
				body = strings.NewReader(tc.body)
			}
			code, resp := rawDo(t, d, tc.method, "/v1.51"+tc.path, hdr, body)
			var e struct{ Message string }
			if err := json.Unmarshal([]byte(resp), &e); err != nil || !strings.HasPrefix(resp, `{"message":`) {
				t.Errorf("not Docker's error shape: %d %.200s", code, resp)
			}
			if code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("%s %s = %d %.300s, want %d containing %q", tc.method, tc.path, code, resp, tc.code, tc.msg)
			}
		})
	}
	// A wrong content type is refused before the body is read.
	code, resp := rawDo(t, d, "POST", "/networks/create", map[string]string{"Content-Type": "text/plain"}, strings.NewReader(`{"Name":"typed"}`))
	if code != 400 || !strings.Contains(resp, "unsupported Content-Type header (text/plain)") {
		t.Errorf("create with text/plain = %d %s", code, resp)
	}
	if after := networkState(t, d); !slices.Equal(before, after) {
		t.Errorf("bad input changed the networks or containers:\nbefore %q\nafter  %q", before, after)
	}
	// The daemon still does the valid requests: unknown fields are ignored
	// (as Docker does), and a prune with a filter matching nothing is empty.
	code, resp = rawDo(t, d, "POST", "/networks/create", map[string]string{"Content-Type": "application/json"}, strings.NewReader(`{"Name":"extra","Nope":{"x":1}}`))
	if code != 201 {
		t.Errorf("create with an unknown field = %d %s", code, resp)
	}
	code, resp = rawDo(t, d, "POST", "/networks/prune?filters="+q(`{"label":{"nomatch":true}}`), nil, nil)
	if code != 200 || strings.TrimSpace(resp) != `{"NetworksDeleted":[]}` {
		t.Errorf("prune matching nothing = %d %s", code, resp)
	}
	dockerOK(t, d, "network", "rm", "extra")
	dockerOK(t, d, "network", "connect", "good", "bi")
	dockerOK(t, d, "network", "disconnect", "good", "bi")
	dockerOK(t, d, "rm", "bi")
	dockerOK(t, d, "network", "rm", "good")
}

// networkState is what bad input must not change: the networks (name, ID,
// subnet, labels), their files, the containers and their endpoints.
func networkState(t *testing.T, d *daemon) []string {
	t.Helper()
	var out []string
	for _, l := range lines(dockerOK(t, d, "network", "ls", "--no-trunc", "--format", "{{.Name}} {{.ID}} {{.Labels}}")) {
		out = append(out, "network "+l)
	}
	for _, l := range lines(dockerOK(t, d, "network", "inspect", "--format", "{{.Name}} {{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}} {{len .Containers}}", "good", "bridge")) {
		out = append(out, "ipam "+l)
	}
	files, _ := filepath.Glob(filepath.Join(d.Data, "hutch", "networks", "*"))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "file "+filepath.Base(f)+" "+st.ModTime().String())
	}
	for _, l := range lines(dockerOK(t, d, "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Names}} {{.Networks}}")) {
		out = append(out, "container "+l)
	}
	slices.Sort(out)
	return out
}
