//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// The Go SDK, which speaks the newest API version (the docker CLI here
// speaks 1.50), against volumes, update, stats, disk usage and events:
// their formats from API 1.52 on.
func TestSDKVolumesStatsEvents(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	since := fmt.Sprint(time.Now().Add(-time.Second).Unix())

	v, err := c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: "sdkvol", Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Volume.Driver != "local" || v.Volume.Labels["k"] != "v" || v.Volume.Mountpoint != filepath.Join(d.Data, "hutch", "volumes", "sdkvol", "_data") {
		t.Errorf("created %+v", v.Volume)
	}
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       "sdkc",
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"sleep", "60"}},
		HostConfig: &containertypes.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: "sdkvol", Target: "/data"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.VolumeRemove(ctx, "sdkvol", client.VolumeRemoveOptions{Force: true}); !errdefs.IsConflict(err) {
		t.Errorf("removing a volume in use: %v", err)
	}

	policy := containertypes.RestartPolicy{Name: "on-failure", MaximumRetryCount: 2}
	if _, err := c.ContainerUpdate(ctx, created.ID, client.ContainerUpdateOptions{RestartPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	if in, err := c.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{}); err != nil || in.Container.HostConfig.RestartPolicy != policy {
		t.Errorf("restart policy after update: %+v, %v", in.Container.HostConfig.RestartPolicy, err)
	}

	// A start returns once the init is told to exec the command, as
	// runc's does: for a moment the init may still be the runtime's
	// (several threads). One sample is taken until it is sleep.
	var s containertypes.StatsResponse
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st, err := c.ContainerStats(ctx, created.ID, client.ContainerStatsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s = containertypes.StatsResponse{}
		err = json.NewDecoder(st.Body).Decode(&s)
		st.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if s.PidsStats.Current == 1 || time.Now().After(deadline) {
			break
		}
	}
	if s.Name != "/sdkc" || s.PidsStats.Current != 1 || s.MemoryStats.Usage == 0 || s.CPUStats.SystemUsage == 0 {
		t.Errorf("stats: %+v", s)
	}

	du, err := c.DiskUsage(ctx, client.DiskUsageOptions{Volumes: true, Containers: true, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if du.Volumes.TotalCount != 1 || du.Volumes.ActiveCount != 1 || len(du.Volumes.Items) != 1 || du.Volumes.Items[0].UsageData.RefCount != 1 ||
		du.Containers.TotalCount != 1 || du.Containers.ActiveCount != 1 || du.Images.TotalCount != 0 {
		t.Errorf("disk usage: %+v", du)
	}

	if _, err := c.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.VolumeRemove(ctx, "sdkvol", client.VolumeRemoveOptions{}); err != nil {
		t.Fatal(err)
	}

	ev := c.Events(ctx, client.EventsListOptions{
		Since: since, Until: fmt.Sprint(time.Now().Add(time.Second).Unix()),
		Filters: make(client.Filters).Add("type", "volume", "container").Add("event", "create", "destroy", "update"),
	})
	var got []string
	for done := false; !done; {
		select {
		case m := <-ev.Messages:
			got = append(got, fmt.Sprintf("%s %s %s", m.Type, m.Action, m.Actor.Attributes["name"]))
		case err := <-ev.Err: // io.EOF once until has passed
			if !errors.Is(err, io.EOF) {
				t.Errorf("events stream: %v", err)
			}
			done = true
		}
	}
	want := []string{"volume create ", "container create sdkc", "container update sdkc", "container destroy sdkc", "volume destroy "}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
