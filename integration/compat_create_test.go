//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// What Docker's create refuses, hutch refuses with Docker's status (400)
// and words, and creates nothing: the cases of moby's TestCreateWithInvalidEnv,
// TestCreateTmpfsMountsTarget, TestCreateInvalidHostConfig and
// TestCreateValidation, and shared namespaces of containers that do not
// exist.
func TestCreateRefusesAsDocker(t *testing.T) {
	d, ref := pulled(t)
	img := `"Image":"` + ref + `"`
	tests := []struct {
		name, body, msg string
	}{
		{"empty config", `{}`, "config cannot be empty in order to create a container"},
		{"invalid port syntax", `{` + img + `,"HostConfig":{"NetworkMode":"default","PortBindings":{"19039;1230":[{}]}}}`, "invalid JSON: invalid port '19039;1230': invalid syntax"},
		{"empty env entry", `{` + img + `,"Env":[""]}`, "invalid environment variable: "},
		{"env without name", `{` + img + `,"Env":["="]}`, "invalid environment variable: ="},
		{"env value without name", `{` + img + `,"Env":["A=1","=foo"]}`, "invalid environment variable: =foo"},
		{"tmpfs dot", `{` + img + `,"HostConfig":{"Tmpfs":{".":""}}}`, "invalid mount path: '.' mount path must be absolute"},
		{"tmpfs relative", `{` + img + `,"HostConfig":{"Tmpfs":{"foo":""}}}`, "invalid mount path: 'foo' mount path must be absolute"},
		{"tmpfs root", `{` + img + `,"HostConfig":{"Tmpfs":{"/":""}}}`, "invalid specification: destination can't be '/'"},
		{"tmpfs double root", `{` + img + `,"HostConfig":{"Tmpfs":{"//":""}}}`, "invalid specification: destination can't be '/'"},
		{"ipc mode", `{` + img + `,"HostConfig":{"IpcMode":"invalid"}}`, "invalid IPC mode: invalid"},
		{"pid mode", `{` + img + `,"HostConfig":{"PidMode":"invalid"}}`, "invalid PID mode: invalid"},
		{"pid mode without container", `{` + img + `,"HostConfig":{"PidMode":"container"}}`, "invalid PID mode: container"},
		{"uts mode", `{` + img + `,"HostConfig":{"UTSMode":"invalid"}}`, "invalid UTS mode: invalid"},
		{"annotation key", `{` + img + `,"HostConfig":{"Annotations":{"":"a"}}}`, "invalid Annotations: the empty string is not permitted as an annotation key"},
		{"negative cpu shares", `{` + img + `,"HostConfig":{"CpuShares":-1}}`, "invalid CPU shares (-1): value must be a positive integer"},
		{"memory too low", `{` + img + `,"HostConfig":{"CpuShares":100,"Memory":524287}}`, "Minimum memory limit allowed is 6MB"},
		{"unknown restart policy", `{` + img + `,"HostConfig":{"RestartPolicy":{"Name":"something"}}}`, "invalid restart policy: unknown policy 'something'"},
		{"retries with always", `{` + img + `,"HostConfig":{"RestartPolicy":{"Name":"always","MaximumRetryCount":2}}}`, "invalid restart policy: maximum retry count can only be used with 'on-failure'"},
		{"negative retries", `{` + img + `,"HostConfig":{"RestartPolicy":{"Name":"on-failure","MaximumRetryCount":-2}}}`, "invalid restart policy: maximum retry count cannot be negative"},
		{"pid of a missing container", `{` + img + `,"HostConfig":{"PidMode":"container:nosuch"}}`, "No such container: nosuch"},
		{"ipc of a missing container", `{` + img + `,"HostConfig":{"IpcMode":"container:nosuch"}}`, "No such container: nosuch"},
		{"host network with links", `{` + img + `,"HostConfig":{"NetworkMode":"host","Links":["a:b"]}}`, "conflicting options: host type networking can't be used with links"},
		{"unknown runtime", `{` + img + `,"HostConfig":{"Runtime":"kata"}}`, "unknown or invalid runtime name: kata"},
	}
	before := dockerOK(t, d, "ps", "-aq")
	hdr := map[string]string{"Content-Type": "application/json"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, resp := rawDo(t, d, "POST", "/v1.51/containers/create", hdr, strings.NewReader(tc.body))
			var e struct{ Message string }
			json.Unmarshal([]byte(resp), &e)
			if code != 400 || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("create = %d %s, want 400 %q", code, resp, tc.msg)
			}
		})
	}
	// The SDK and the CLI see a bad parameter: the CLI does not go looking
	// for the image, as it does on a 404.
	_, err := d.Client(t).ContainerCreate(context.Background(), client.ContainerCreateOptions{
		Config: &containertypes.Config{Image: ref, Env: []string{"=foo"}},
	})
	if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), "invalid environment variable: =foo") {
		t.Errorf("SDK create with env =foo: %v", err)
	}
	out, err := d.Docker(t, "create", "--pid", "container:nosuch", ref)
	if err == nil || !strings.Contains(out, "No such container: nosuch") || strings.Contains(out, "Unable to find image") {
		t.Errorf("docker create --pid container:nosuch: %v %s", err, out)
	}
	if after := dockerOK(t, d, "ps", "-aq"); after != before {
		t.Errorf("refused creates left containers: %q, before %q", after, before)
	}
	// What Docker accepts still goes: a memory limit of 6MB, the default
	// restart policy with no retries, and json-file's max-file without
	// max-size (ignored, as Docker does).
	code, resp := rawDo(t, d, "POST", "/v1.51/containers/create", hdr, strings.NewReader(`{`+img+`,"HostConfig":{"Memory":6291456,"RestartPolicy":{"Name":"on-failure","MaximumRetryCount":0}}}`))
	if code != 201 {
		t.Errorf("create with 6MB of memory = %d %s", code, resp)
	}
	id := dockerOK(t, d, "run", "-d", "--log-driver", "json-file", "--log-opt", "max-file=3", ref, "echo", "logged")
	dockerOK(t, d, "wait", id)
	if out := dockerOK(t, d, "logs", id); out != "logged" {
		t.Errorf("logs with max-file alone = %q", out)
	}
	if out := dockerOK(t, d, "inspect", "-f", "{{index .HostConfig.LogConfig.Config \"max-file\"}}", id); out != "3" {
		t.Errorf("max-file in inspect = %q", out)
	}
}

// What Docker fills in the host config at create, inspect shows: the
// masked and read-only paths of an unprivileged container (moby's
// TestCreateWithCustomMaskedPaths and TestCreateWithCustomReadonlyPaths),
// the IPC mode (shareable for clients before API 1.40) and the runtime.
func TestCreateFillsHostConfig(t *testing.T) {
	d, ref := pulled(t)
	ctx := context.Background()
	c := d.Client(t)
	thermal, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	defMasked := append([]string{"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats", "/sys/devices/virtual/powercap", "/sys/firmware"}, thermal...)
	defReadonly := []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	tests := []struct {
		name             string
		privileged       bool
		masked, readonly []string
		wantM, wantR     []string
	}{
		{name: "defaults", wantM: defMasked, wantR: defReadonly},
		{name: "none", masked: []string{}, readonly: []string{}, wantM: []string{}, wantR: []string{}},
		{name: "custom", masked: []string{"/proc/kcore", "/proc/keys"}, readonly: []string{"/proc/asound", "/proc/bus"},
			wantM: []string{"/proc/kcore", "/proc/keys"}, wantR: []string{"/proc/asound", "/proc/bus"}},
		{name: "privileged", privileged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
				Config:     &containertypes.Config{Image: ref, Cmd: []string{"true"}},
				HostConfig: &containertypes.HostConfig{Privileged: tc.privileged, MaskedPaths: tc.masked, ReadonlyPaths: tc.readonly},
			})
			if err != nil {
				t.Fatal(err)
			}
			check := func(when string) {
				res, err := c.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				hc := res.Container.HostConfig
				if !sameList(hc.MaskedPaths, tc.wantM) || !sameList(hc.ReadonlyPaths, tc.wantR) {
					t.Errorf("%s: MaskedPaths %q, ReadonlyPaths %q; want %q, %q", when, hc.MaskedPaths, hc.ReadonlyPaths, tc.wantM, tc.wantR)
				}
				if hc.IpcMode != "private" || hc.Runtime != "runc" {
					t.Errorf("%s: IpcMode %q, Runtime %q", when, hc.IpcMode, hc.Runtime)
				}
			}
			check("created")
			if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
			wait := c.ContainerWait(ctx, cr.ID, client.ContainerWaitOptions{})
			select {
			case <-wait.Result:
			case err := <-wait.Error:
				t.Fatal(err)
			}
			check("exited")
		})
	}
	// The lists are those the start applies.
	out := dockerOK(t, d, "run", "--rm", ref, "awk", `$2=="/proc/keys"||$2=="/proc/sys"{print $2, substr($4, 1, 2)}`, "/proc/mounts")
	if !strings.Contains(out, "/proc/keys") || !strings.Contains(out, "/proc/sys ro") {
		t.Errorf("masked and read-only mounts in the container: %q", out)
	}

	// A client of API 1.39 gets the IPC namespace shareable, as on Docker.
	old, err := client.New(client.WithHost(d.Host()), client.WithAPIVersion("1.39"))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	cr, err := old.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out := dockerOK(t, d, "inspect", "-f", "{{.HostConfig.IpcMode}} {{.HostConfig.Runtime}}", cr.ID); out != "shareable runc" {
		t.Errorf("created with API 1.39: %q", out)
	}
}

// sameList compares lists as inspect gives them: null and [] differ.
func sameList(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// Several endpoints at create, as Docker 29 takes them (API 1.44 and
// later; moby's TestCreateWithMultipleEndpointSettings): the networks
// need not exist before the start, which connects the container to all of
// them. Before 1.44, one endpoint at most.
func TestCreateSeveralNetworks(t *testing.T) {
	d, ref := pulled(t)
	ctx := context.Background()
	eps := func(names ...string) *network.NetworkingConfig {
		nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{}}
		for _, n := range names {
			nc.EndpointsConfig[n] = &network.EndpointSettings{}
		}
		return nc
	}
	for _, tc := range []struct{ version, err string }{
		{"1.44", ""},
		{"1.43", "Container cannot be created with multiple network endpoints: net1, net2, net3"},
	} {
		c, err := client.New(client.WithHost(d.Host()), client.WithAPIVersion(tc.version))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref}, NetworkingConfig: eps("net1", "net2", "net3")})
		c.Close()
		if tc.err == "" && err != nil || tc.err != "" && (!errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("API %s: %v, want %q", tc.version, err, tc.err)
		}
	}

	dockerOK(t, d, "network", "create", "front")
	dockerOK(t, d, "network", "create", "back")
	c := d.Client(t)
	nc := eps("front", "back")
	nc.EndpointsConfig["back"].Aliases = []string{"api"}
	cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:             "multi",
		Config:           &containertypes.Config{Image: ref, Cmd: []string{"sleep", "300"}},
		HostConfig:       &containertypes.HostConfig{NetworkMode: "front"},
		NetworkingConfig: nc,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.ContainerInspect(ctx, cr.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nets := res.Container.NetworkSettings.Networks
	for _, n := range []string{"front", "back"} {
		if nets[n] == nil || !nets[n].IPAddress.IsValid() {
			t.Fatalf("not connected to %s: %v", n, nets)
		}
	}
	if out := dockerOK(t, d, "exec", "multi", "sh", "-c", "ip -o -4 addr show | grep -c 'eth[0-9]'"); out != "2" {
		t.Errorf("interfaces in the container: %q", out)
	}
	if out := dockerOK(t, d, "run", "--rm", "--network", "back", ref, "nslookup", "api"); !strings.Contains(out, nets["back"].IPAddress.String()) {
		t.Errorf("the alias on back does not answer %s:\n%s", nets["back"].IPAddress, out)
	}

	// A network that does not exist yet fails the start, not the create,
	// and the container starts once it does.
	for _, args := range [][]string{{"--network", "later"}, {"--network", "../../etc"}} {
		id := dockerOK(t, d, append(append([]string{"create"}, args...), ref, "true")...)
		out, err := d.Docker(t, "start", id)
		if err == nil || !strings.Contains(out, "network "+args[1]+" not found") {
			t.Errorf("start on %s: %v %s", args[1], err, out)
		}
		dockerOK(t, d, "rm", id)
	}
	cr, err = c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{Image: ref, Cmd: []string{"true"}}, NetworkingConfig: eps("later")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "network later not found") {
		t.Errorf("start before the network is made: %v", err)
	}
	dockerOK(t, d, "network", "create", "later")
	if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
		t.Errorf("start once the network is made: %v", err)
	}
}
