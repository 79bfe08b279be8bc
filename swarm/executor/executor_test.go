package executor

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"github.com/moby/swarmkit/v2/api"
)

func TestCreateOptions(t *testing.T) {
	task := &api.Task{
		ID: "t1", ServiceID: "s1", NodeID: "n1", Slot: 2,
		ServiceAnnotations: api.Annotations{Name: "web", Labels: map[string]string{
			NetworksLabel: `[{"ID":"id1","Name":"appnet","Aliases":["w"]}]`,
		}},
		Spec: api.TaskSpec{Runtime: &api.TaskSpec_Container{Container: &api.ContainerSpec{
			Image: "busybox", Command: []string{"sh"}, Args: []string{"-c", "true"},
			Labels: map[string]string{"l": "v"}, Hosts: []string{"10.0.0.1 db db.local"},
		}}},
		Endpoint: &api.Endpoint{Spec: &api.EndpointSpec{Ports: []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080, PublishMode: api.PublishModeHost}}}},
	}
	opts, err := createOptions(task, "web.2.t1", nil)
	if err != nil {
		t.Fatal(err)
	}
	l := opts.Config.Labels
	if opts.Name != "web.2.t1" || l[LabelServiceID] != "s1" || l[LabelServiceName] != "web" || l[LabelTaskID] != "t1" || l[LabelNodeID] != "n1" || l[LabelTaskName] != "web.2.t1" || l["l"] != "v" {
		t.Errorf("name and labels: %s %v", opts.Name, l)
	}
	if !reflect.DeepEqual(opts.Config.Entrypoint, []string{"sh"}) || !reflect.DeepEqual(opts.Config.Cmd, []string{"-c", "true"}) {
		t.Errorf("entrypoint and cmd: %v %v", opts.Config.Entrypoint, opts.Config.Cmd)
	}
	if !reflect.DeepEqual(opts.HostConfig.ExtraHosts, []string{"db:10.0.0.1", "db.local:10.0.0.1"}) {
		t.Errorf("extra hosts: %v", opts.HostConfig.ExtraHosts)
	}
	if len(opts.HostConfig.PortBindings) != 1 {
		t.Errorf("port bindings: %v", opts.HostConfig.PortBindings)
	}
	ep := opts.NetworkingConfig.EndpointsConfig["appnet"]
	if opts.HostConfig.NetworkMode != "appnet" || ep == nil || !reflect.DeepEqual(ep.Aliases, []string{"web", "w"}) {
		t.Errorf("networks: %v %+v", opts.HostConfig.NetworkMode, ep)
	}
}

func TestDemux(t *testing.T) {
	var buf bytes.Buffer
	for _, f := range []struct {
		s byte
		d string
	}{{1, "2026-01-02T03:04:05.000000006Z out\n"}, {2, "err\n"}} {
		hdr := make([]byte, 8)
		hdr[0] = f.s
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(f.d)))
		buf.Write(hdr)
		buf.WriteString(f.d)
	}
	var got []string
	if err := demux(&buf, func(s byte, fr []byte) error {
		ts, data := splitTimestamp(fr)
		if s == 1 && !ts.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)) {
			t.Errorf("timestamp %v", ts)
		}
		got = append(got, string(data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"out\n", "err\n"}) {
		t.Errorf("frames: %q", got)
	}
}

// FuzzDemux: the engine's log stream is read or refused, never a panic
// nor a huge allocation.
func FuzzDemux(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x03ab\n"))
	f.Add([]byte("\x02\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = demux(bytes.NewReader(b), func(_ byte, fr []byte) error {
			splitTimestamp(fr)
			return nil
		})
	})
}

// FuzzParseNetworks: a service's networks label, as any client may have
// set labels, is read or ignored.
func FuzzParseNetworks(f *testing.F) {
	f.Add(`[{"ID":"a","Name":"n","Aliases":["x"]}]`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, v string) {
		for _, n := range ParseNetworks(v) {
			_ = n.Name
		}
	})
}
