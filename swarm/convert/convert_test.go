package convert

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/swarm"
)

func u64(v uint64) *uint64 { return &v }

func TestServiceSpecRoundTrip(t *testing.T) {
	grace, delay := 3*time.Second, 2*time.Second
	init := true
	in := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: "web", Labels: map[string]string{"a": "b"}},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{
				Image: "busybox", Command: []string{"sh"}, Args: []string{"-c", "true"}, Env: []string{"A=1"},
				Init: &init, StopGracePeriod: &grace,
				Mounts:  []mount.Mount{{Type: mount.TypeVolume, Source: "v", Target: "/v"}, {Type: mount.TypeTmpfs, Target: "/t"}},
				Secrets: []*swarm.SecretReference{{SecretID: "s1", SecretName: "pw", File: &swarm.SecretReferenceFileTarget{Name: "pw", UID: "0", GID: "0", Mode: 0o400}}},
			},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionOnFailure, Delay: &delay, MaxAttempts: u64(3)},
			Placement:     &swarm.Placement{Constraints: []string{"node.role==manager"}},
			Resources:     &swarm.ResourceRequirements{Limits: &swarm.Limit{MemoryBytes: 1 << 20, Pids: 10}},
		},
		Mode:         swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: u64(3)}},
		UpdateConfig: &swarm.UpdateConfig{Parallelism: 1, Delay: time.Second, FailureAction: swarm.UpdateFailureActionRollback, Order: swarm.UpdateOrderStartFirst, Monitor: 5 * time.Second},
		EndpointSpec: &swarm.EndpointSpec{Mode: swarm.ResolutionModeDNSRR, Ports: []swarm.PortConfig{{Protocol: "udp", TargetPort: 53, PublishedPort: 5353, PublishMode: swarm.PortConfigPublishModeHost}}},
	}
	gs, err := ServiceSpecToGRPC(in)
	if err != nil {
		t.Fatal(err)
	}
	out := ServiceSpecFromGRPC(gs)
	if !reflect.DeepEqual(out.TaskTemplate.ContainerSpec.Secrets, in.TaskTemplate.ContainerSpec.Secrets) ||
		*out.Mode.Replicated.Replicas != 3 || *out.TaskTemplate.ContainerSpec.StopGracePeriod != grace ||
		!reflect.DeepEqual(out.UpdateConfig, in.UpdateConfig) || !reflect.DeepEqual(out.EndpointSpec, in.EndpointSpec) ||
		out.TaskTemplate.RestartPolicy.Condition != swarm.RestartPolicyConditionOnFailure || *out.TaskTemplate.RestartPolicy.Delay != delay ||
		out.TaskTemplate.Resources.Limits.Pids != 10 || len(out.TaskTemplate.ContainerSpec.Mounts) != 2 || !*out.TaskTemplate.ContainerSpec.Init {
		t.Errorf("round trip:\n%+v\n%+v", in, out)
	}
}

func TestServiceSpecRefused(t *testing.T) {
	ok := swarm.TaskSpec{ContainerSpec: &swarm.ContainerSpec{Image: "busybox"}}
	for name, spec := range map[string]swarm.ServiceSpec{
		"ingress port":     {TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{{TargetPort: 80, PublishedPort: 8080}}}},
		"bad publish mode": {TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{{TargetPort: 80, PublishMode: "mesh"}}}},
		"bad protocol":     {TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{{TargetPort: 80, Protocol: "icmp", PublishMode: swarm.PortConfigPublishModeHost}}}},
		"no target port":   {TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{{PublishMode: swarm.PortConfigPublishModeHost}}}},
		"bad restart":      {TaskTemplate: swarm.TaskSpec{ContainerSpec: ok.ContainerSpec, RestartPolicy: &swarm.RestartPolicy{Condition: "sometimes"}}},
		"bad failure act":  {TaskTemplate: ok, UpdateConfig: &swarm.UpdateConfig{FailureAction: "explode"}},
		"bad order":        {TaskTemplate: ok, RollbackConfig: &swarm.UpdateConfig{Order: "sideways"}},
		"no container":     {},
		"plugin":           {TaskTemplate: swarm.TaskSpec{PluginSpec: &swarm.RuntimeSpec{Name: "p"}}},
		"bad mount":        {TaskTemplate: swarm.TaskSpec{ContainerSpec: &swarm.ContainerSpec{Image: "b", Mounts: []mount.Mount{{Type: "npipe", Target: "/x"}}}}},
		"bad propagation":  {TaskTemplate: swarm.TaskSpec{ContainerSpec: &swarm.ContainerSpec{Image: "b", Mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/a", Target: "/x", BindOptions: &mount.BindOptions{Propagation: "weird"}}}}}},
		"bad resolution":   {TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Mode: "anycast"}},
		"credential spec":  {TaskTemplate: swarm.TaskSpec{ContainerSpec: &swarm.ContainerSpec{Image: "b", Privileges: &swarm.Privileges{CredentialSpec: &swarm.CredentialSpec{File: "x"}}}}},
	} {
		if _, err := ServiceSpecToGRPC(spec); !errdefs.IsInvalidArgument(err) {
			t.Errorf("%s: %v, want an InvalidArgument error", name, err)
		}
	}
	_, err := ServiceSpecToGRPC(swarm.ServiceSpec{TaskTemplate: ok, EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{{TargetPort: 80}}}})
	if !errors.Is(err, ErrIngress) {
		t.Errorf("a port without a mode: %v, want the ingress refusal", err)
	}
}

func TestParseFilters(t *testing.T) {
	f, err := ParseFilters(`{"name":{"a":true,"b":false},"label":["k=v","x"]}`, "name", "label")
	if err != nil || !reflect.DeepEqual(f["name"], []string{"a"}) || !reflect.DeepEqual(f.Labels("label"), map[string]string{"k": "v", "x": ""}) {
		t.Errorf("ParseFilters = %v, %v", f, err)
	}
	for _, raw := range []string{`{"nope":{"a":true}}`, `{"name":3}`, `[`} {
		if _, err := ParseFilters(raw, "name"); !errdefs.IsInvalidArgument(err) {
			t.Errorf("ParseFilters(%s) = %v, want an InvalidArgument error", raw, err)
		}
	}
}

// FuzzServiceSpec feeds decoded service specs (the body of service create
// and update) through the conversion: it refuses or converts, never
// panics, and what it converts converts back to the same mode and image.
func FuzzServiceSpec(f *testing.F) {
	f.Add(`{"Name":"s","TaskTemplate":{"ContainerSpec":{"Image":"busybox","Args":["sh"]}},"Mode":{"Replicated":{"Replicas":2}}}`)
	f.Add(`{"TaskTemplate":{"ContainerSpec":{"Image":"b","Mounts":[{"Type":"bind","Source":"/a","Target":"/b","BindOptions":{"Propagation":"rshared"}}]},"RestartPolicy":{"Condition":"none"}},"EndpointSpec":{"Ports":[{"TargetPort":80,"PublishMode":"host"}]}}`)
	f.Add(`{"TaskTemplate":{"ContainerSpec":{"Image":"b","Secrets":[{"SecretID":"x","File":{"Name":"n","Mode":292}}],"Configs":[{"ConfigID":"c","Runtime":{}}]}},"Mode":{"Global":{}},"UpdateConfig":{"FailureAction":"rollback"}}`)
	f.Add(`{"TaskTemplate":{"ContainerSpec":{"Image":"b","DNSConfig":{"Nameservers":["1.1.1.1"]},"Healthcheck":{"Test":["CMD","true"]}}},"Mode":{"ReplicatedJob":{}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var spec swarm.ServiceSpec
		if json.Unmarshal([]byte(body), &spec) != nil {
			return
		}
		gs, err := ServiceSpecToGRPC(spec)
		if err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		back := ServiceSpecFromGRPC(gs)
		if back.TaskTemplate.ContainerSpec == nil || back.TaskTemplate.ContainerSpec.Image != spec.TaskTemplate.ContainerSpec.Image {
			t.Fatalf("image lost: %+v", back.TaskTemplate.ContainerSpec)
		}
		if (back.Mode.Global != nil) != (spec.Mode.Global != nil) {
			t.Fatalf("mode changed: %+v -> %+v", spec.Mode, back.Mode)
		}
	})
}

// FuzzFilters: any filters query is parsed or refused as a bad request.
func FuzzFilters(f *testing.F) {
	f.Add(`{"name":{"a":true}}`)
	f.Add(`{"label":["a=b"]}`)
	f.Add(`{"id":{}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		fl, err := ParseFilters(raw, "name", "label", "id")
		if err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("error of no class: %v", err)
			}
			return
		}
		_ = fl.Labels("label")
	})
}
