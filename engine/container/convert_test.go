package container

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// sampleContainer is a record with something in every part.
func sampleContainer() *Container {
	timeout := 5
	return &Container{
		ID:      testID,
		Name:    "/web",
		Created: t0,
		Path:    "sh",
		Args:    []string{"-c", "echo hello world"},
		Config: &containertypes.Config{
			Image:        "busybox",
			Cmd:          []string{"sh", "-c", "echo hello world"},
			Env:          []string{"PATH=/bin"},
			Labels:       map[string]string{"app": "web", "tier": "front"},
			ExposedPorts: network.PortSet{network.MustParsePort("80/tcp"): {}},
			StopTimeout:  &timeout,
		},
		HostConfig: &containertypes.HostConfig{
			NetworkMode:   "bridge",
			AutoRemove:    true,
			Binds:         []string{"/src:/dst:ro"},
			RestartPolicy: containertypes.RestartPolicy{Name: "on-failure", MaximumRetryCount: 3},
			PortBindings: network.PortMap{
				network.MustParsePort("80/tcp"): {{HostPort: "8080"}},
			},
		},
		ImageID: "sha256:" + testID,
		Image:   "busybox",
		State:   State{Status: StatusCreated},
		LogPath: "/data/containers/" + testID + "/" + testID + "-json.log",
		Driver:  "overlay",
		Mounts: []containertypes.MountPoint{
			{Type: "bind", Source: "/src", Destination: "/dst", Mode: "ro"},
		},
		NetworkSettings: &containertypes.NetworkSettings{
			Ports: network.PortMap{
				network.MustParsePort("80/tcp"): {{HostIP: netip.MustParseAddr("0.0.0.0"), HostPort: "8080"}},
				network.MustParsePort("53/udp"): nil,
			},
			Networks: map[string]*network.EndpointSettings{
				"bridge": {NetworkID: "net1", IPAddress: netip.MustParseAddr("10.88.0.2"), IPPrefixLen: 16, Aliases: []string{"x"}},
			},
		},
		Runtime: Runtime{RootfsID: "r1", BundleDir: "/b", ShimSocket: "/s.sock", Extra: map[string]string{"k": "v"}},
	}
}

// jsonOf decodes v's JSON into generic values, to check what a client sees.
func jsonOf(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks a path of object keys.
func at(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		o, ok := v.(map[string]any)
		if !ok {
			return "<missing>"
		}
		if v, ok = o[k]; !ok {
			return "<missing>"
		}
	}
	return v
}

func TestInspectBare(t *testing.T) {
	// A container with as little as Create leaves: every list and map
	// Docker shows as [] or {} must not be null.
	c := &Container{ID: testID, Name: "/bare", Created: t0, Path: "true", ImageID: "sha256:abc", State: State{Status: StatusCreated}}
	m := jsonOf(t, c.Inspect())
	tests := []struct {
		path []string
		want any
	}{
		{[]string{"Id"}, testID},
		{[]string{"Name"}, "/bare"},
		{[]string{"Created"}, "2025-03-01T12:00:00Z"},
		{[]string{"Path"}, "true"},
		{[]string{"Args"}, []any{}},
		{[]string{"Image"}, "sha256:abc"},
		{[]string{"Platform"}, "linux"},
		{[]string{"Mounts"}, []any{}},
		{[]string{"ExecIDs"}, nil},
		{[]string{"State", "Status"}, "created"},
		{[]string{"State", "Running"}, false},
		{[]string{"State", "Dead"}, false},
		{[]string{"State", "StartedAt"}, "0001-01-01T00:00:00Z"},
		{[]string{"State", "FinishedAt"}, "0001-01-01T00:00:00Z"},
		{[]string{"NetworkSettings", "Ports"}, map[string]any{}},
		{[]string{"NetworkSettings", "Networks"}, map[string]any{}},
		{[]string{"HostConfig", "NetworkMode"}, ""},
		{[]string{"Config", "Labels"}, nil},
	}
	for _, tt := range tests {
		if got := at(m, tt.path...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v = %#v, want %#v", tt.path, got, tt.want)
		}
	}
}

func TestInspectStates(t *testing.T) {
	started := t0.Add(time.Second)
	tests := []struct {
		name                              string
		st                                State
		status                            string
		running, paused, restarting, dead bool
		pid, code                         float64
		startedAt                         string
	}{
		{"running", State{Status: StatusRunning, Pid: 9, StartedAt: started}, "running", true, false, false, false, 9, 0, "2025-03-01T12:00:01Z"},
		{"paused", State{Status: StatusPaused, Pid: 9, StartedAt: started}, "paused", true, true, false, false, 9, 0, "2025-03-01T12:00:01Z"},
		{"restarting", State{Status: StatusRestarting, ExitCode: 2, StartedAt: started}, "restarting", true, false, true, false, 0, 2, "2025-03-01T12:00:01Z"},
		{"exited", State{Status: StatusExited, ExitCode: 137, StartedAt: started}, "exited", false, false, false, false, 0, 137, "2025-03-01T12:00:01Z"},
		{"removing", State{Status: StatusExited, Removing: true, StartedAt: started}, "removing", false, false, false, false, 0, 0, "2025-03-01T12:00:01Z"},
		{"dead", State{Status: StatusDead, StartedAt: started}, "dead", false, false, false, true, 0, 0, "2025-03-01T12:00:01Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := sampleContainer()
			c.State = tt.st
			s := jsonOf(t, c.Inspect())["State"].(map[string]any)
			want := map[string]any{
				"Status": tt.status, "Running": tt.running, "Paused": tt.paused, "Restarting": tt.restarting,
				"Dead": tt.dead, "Pid": tt.pid, "ExitCode": tt.code, "StartedAt": tt.startedAt,
				"OOMKilled": false, "Error": "", "FinishedAt": "0001-01-01T00:00:00Z",
			}
			if !reflect.DeepEqual(s, want) {
				t.Fatalf("State = %v\nwant    %v", s, want)
			}
		})
	}
}

func TestInspectFull(t *testing.T) {
	c := sampleContainer()
	got := c.Inspect()
	if got.Config.Image != "busybox" || got.Image != c.ImageID || got.HostConfig.RestartPolicy.Name != "on-failure" {
		t.Fatalf("config not carried: %+v", got)
	}
	if got.GraphDriver == nil || got.GraphDriver.Name != "overlay" || got.LogPath != c.LogPath {
		t.Fatalf("GraphDriver/LogPath: %+v %q", got.GraphDriver, got.LogPath)
	}
	if len(got.NetworkSettings.Ports) != 2 || got.NetworkSettings.Networks["bridge"].IPAddress.String() != "10.88.0.2" {
		t.Fatalf("NetworkSettings: %+v", got.NetworkSettings)
	}
	// The copy of the endpoint is independent of the record.
	got.NetworkSettings.Networks["bridge"].Aliases[0] = "changed"
	if c.NetworkSettings.Networks["bridge"].Aliases[0] != "x" {
		t.Fatal("Inspect shares endpoint settings with the record")
	}
}

func TestSummary(t *testing.T) {
	c := sampleContainer()
	c.State = State{Status: StatusRunning, Pid: 5, StartedAt: t0}
	now := t0.Add(3 * time.Second)
	s := c.SummaryAt(now)
	want := containertypes.Summary{
		ID:      testID,
		Names:   []string{"/web"},
		Image:   "busybox",
		ImageID: "sha256:" + testID,
		Command: "sh -c 'echo hello world'",
		Created: t0.Unix(),
		Ports: []containertypes.PortSummary{
			{PrivatePort: 53, Type: "udp"},
			{PrivatePort: 80, PublicPort: 8080, Type: "tcp", IP: netip.MustParseAddr("0.0.0.0")},
		},
		Labels: map[string]string{"app": "web", "tier": "front"},
		State:  "running",
		Status: "Up 3 seconds",
		Health: &containertypes.HealthSummary{Status: "none"},
		NetworkSettings: &containertypes.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{
			"bridge": {NetworkID: "net1", IPAddress: netip.MustParseAddr("10.88.0.2"), IPPrefixLen: 16},
		}},
		Mounts: []containertypes.MountPoint{{Type: "bind", Source: "/src", Destination: "/dst", Mode: "ro"}},
	}
	want.HostConfig.NetworkMode = "bridge"
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("Summary =\n%+v\nwant\n%+v", s, want)
	}
	// The summary's labels are its own.
	s.Labels["app"] = "x"
	if c.Config.Labels["app"] != "web" {
		t.Fatal("Summary shares labels with the record")
	}
	// A health check's status and streak are in the summary.
	c.State.Health = &containertypes.Health{Status: containertypes.Unhealthy, FailingStreak: 4}
	if h := c.SummaryAt(now).Health; h == nil || *h != (containertypes.HealthSummary{Status: containertypes.Unhealthy, FailingStreak: 4}) {
		t.Fatalf("health summary %+v", h)
	}
}

func TestSummaryBare(t *testing.T) {
	c := &Container{ID: testID, Name: "/bare", Created: t0, Path: "true", ImageID: "sha256:abc",
		Config: &containertypes.Config{Image: "alpine"}, State: State{Status: StatusExited, ExitCode: 1, StartedAt: t0, FinishedAt: t0}}
	m := jsonOf(t, c.SummaryAt(t0.Add(90*time.Second)))
	tests := []struct {
		key  string
		want any
	}{
		{"Names", []any{"/bare"}},
		{"Image", "alpine"},
		{"Command", "true"},
		{"Ports", []any{}},
		{"Labels", map[string]any{}},
		{"Mounts", []any{}},
		{"State", "exited"},
		{"Status", "Exited (1) About a minute ago"},
		{"NetworkSettings", map[string]any{"Networks": map[string]any{}}},
		{"HostConfig", map[string]any{}},
	}
	for _, tt := range tests {
		if got := m[tt.key]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", tt.key, got, tt.want)
		}
	}
}

func TestCommand(t *testing.T) {
	tests := []struct {
		path string
		args []string
		want string
	}{
		{"true", nil, "true"},
		{"sh", []string{"-c", "echo hi"}, "sh -c 'echo hi'"},
		{"/entry.sh", []string{"a", "b"}, "/entry.sh a b"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			c := &Container{Path: tt.path, Args: tt.args}
			if got := c.Command(); got != tt.want {
				t.Fatalf("Command() = %q", got)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := sampleContainer()
	cp := c.Clone()
	if !reflect.DeepEqual(jsonOf(t, c), jsonOf(t, cp)) {
		t.Fatal("clone differs")
	}
	cp.Config.Labels["app"] = "x"
	cp.HostConfig.Binds[0] = "x"
	cp.Runtime.Extra["k"] = "x"
	if c.Config.Labels["app"] != "web" || c.HostConfig.Binds[0] != "/src:/dst:ro" || c.Runtime.Extra["k"] != "v" {
		t.Fatal("clone shares data with the original")
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !validID(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
		allDigits := true
		for _, r := range ShortID(id) {
			allDigits = allDigits && r >= '0' && r <= '9'
		}
		if allDigits {
			t.Fatalf("short id of %s is a number", id)
		}
	}
}
