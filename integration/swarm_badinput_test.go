//go:build integration

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// post sends a JSON body to the engine's API and returns status and body.
func (d *daemon) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://hutch/v1.47"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := unixHTTPClient(d.Socket).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Bad requests to a swarm's endpoints get Docker's 4xx with a
// {"message": …} body, and nothing is created.
func TestSwarmBadInput(t *testing.T) {
	d, ref := pulled(t)
	swarmInit(t, d)
	img := `"` + ref + `"`
	for _, tc := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/services/create", `{"Name":`, 400, "invalid JSON"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}},"Mode":{"Replicated":{"Replicas":"two"}}}`, 400, "invalid JSON"},
		{"/services/create", `{"Name":"a"}`, 400, "ContainerSpec: must be provided"},
		{"/services/create", `{"Name":"bad name!","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}}}`, 400, "InvalidArgument"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `},"RestartPolicy":{"Condition":"sometimes"}}}`, 400, `invalid RestartCondition: "sometimes"`},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}},"UpdateConfig":{"FailureAction":"explode"}}`, 400, "unrecognized update failure action explode"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}},"EndpointSpec":{"Ports":[{"TargetPort":80,"PublishedPort":8080}]}}`, 400, "no ingress routing mesh"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}},"EndpointSpec":{"Ports":[{"TargetPort":80,"PublishMode":"mesh"}]}}`, 400, "unknown publish mode: mesh"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `},"Networks":[{"Target":"nosuchnet"}]}}`, 404, "network nosuchnet not found"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `},"Networks":[{"Target":"host"}]}}`, 400, "services run on bridge networks"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"PluginSpec":{"Name":"p"}}}`, 400, "container tasks only"},
		{"/services/create", `{"Name":"a","Labels":{"com.hutch.swarm.networks":"[]"},"TaskTemplate":{"ContainerSpec":{"Image":` + img + `}}}`, 400, "is hutch's own"},
		{"/services/create", `{"Name":"a","TaskTemplate":{"ContainerSpec":{"Image":` + img + `,"Mounts":[{"Type":"npipe","Target":"/x"}]}}}`, 400, "invalid mount type"},
		{"/services/nosuch/update?version=1", `{"Name":"nosuch","TaskTemplate":{"ContainerSpec":{"Image":` + img + `}}}`, 404, "service nosuch not found"},
		{"/services/nosuch/update?version=x", `{}`, 400, "invalid service version 'x'"},
		{"/swarm/update?version=", `{}`, 400, "invalid swarm version"},
		{"/swarm/init", `{"ListenAddr":"127.0.0.1:1"}`, 503, "already part of a swarm"},
		{"/swarm/join", `{"RemoteAddrs":[]}`, 503, "already part of a swarm"},
		{"/nodes/self/update?version=1", `{"Role":"boss"}`, 400, `invalid Role: "boss"`},
		{"/secrets/create", `{"Name":"s","Data":"not base64!"}`, 400, "invalid JSON"},
		{"/secrets/create", `{"Name":"s","Data":"eA==","Driver":{"Name":"vault"}}`, 400, "no secret drivers"},
		{"/configs/create", `{"Name":"c"}`, 400, "config data must be larger than 0"},
		{"/networks/create", `{"Name":"ov","Driver":"overlay","Ingress":true}`, 501, "no ingress network"},
	} {
		status, body := d.post(t, tc.path, tc.body)
		var m struct{ Message string }
		if status != tc.status || json.Unmarshal([]byte(body), &m) != nil || !strings.Contains(m.Message, tc.msg) {
			t.Errorf("POST %s %s: %d %s, want %d with %q", tc.path, tc.body, status, body, tc.status, tc.msg)
		}
	}
	for _, path := range []string{
		`/services?filters={"nope":{"x":true}}`,
		`/tasks?filters={"desired-state":{"sleeping":true}}`,
		`/nodes?filters={"role":{"boss":true}}`,
		`/secrets?filters=[`,
	} {
		if status, _, body := d.rawRequest(t, http.MethodGet, strings.ReplaceAll(path, `"`, "%22"), ""); status != 400 || !strings.Contains(body, `"message"`) {
			t.Errorf("GET %s: %d %s, want a 400", path, status, body)
		}
	}
	for _, args := range [][]string{{"service", "ls", "-q"}, {"secret", "ls", "-q"}, {"config", "ls", "-q"}, {"ps", "-aq"}} {
		if out, err := d.Docker(t, args...); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("docker %v after the bad requests: %v %q", args, err, out)
		}
	}
	if out, err := d.Docker(t, "network", "ls", "--filter", "name=ov", "-q"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("a refused network exists: %v %q", err, out)
	}
}

// docker service create and update without -d wait for the service to
// converge, reading tasks and nodes as Docker's progress does.
func TestSwarmServiceAttached(t *testing.T) {
	t.Parallel() // swarm tests mostly wait on SwarmKit: two at a time
	d, ref := pulled(t)
	swarmInit(t, d)
	out, err := d.Docker(t, "service", "create", "--name", "fg", "--replicas", "2", ref, "sleep", "3600")
	if err != nil || !strings.Contains(out, "verify: Service") || !strings.Contains(out, "converged") {
		t.Fatalf("docker service create (attached): %v\n%s", err, out)
	}
	if n := len(runningContainers(t, d, "fg")); n != 2 {
		t.Errorf("after the attached create, %d running containers", n)
	}
	out, err = d.Docker(t, "service", "update", "--env-add", "X=1", "fg")
	if err != nil || !strings.Contains(out, "converged") {
		t.Errorf("docker service update (attached): %v\n%s", err, out)
	}
}
