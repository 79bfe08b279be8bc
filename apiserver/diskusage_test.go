package apiserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/volume"

	"github.com/hutch-engine/hutch/engine"
)

// fakeDiskUsage has two images (one used), a running and a stopped
// container, and a used and an unused volume.
type fakeDiskUsage struct{ fakeBackend }

func (*fakeDiskUsage) SystemDiskUsage(context.Context) (engine.DiskUsage, error) {
	return engine.DiskUsage{
		LayersSize: 1000,
		Images:     []image.Summary{{ID: "i1", Size: 600, SharedSize: 100, Containers: 2}, {ID: "i2", Size: 500, SharedSize: 100}},
		Containers: []container.Summary{{ID: "c1", State: container.StateRunning, SizeRw: 10}, {ID: "c2", State: container.StateExited, SizeRw: 30}},
		Volumes: []volume.Volume{
			{Name: "v1", UsageData: &volume.UsageData{Size: 7, RefCount: 1}},
			{Name: "v2", UsageData: &volume.UsageData{Size: 5}},
		},
	}, nil
}

func TestSystemDF(t *testing.T) {
	for _, tc := range []struct {
		target, want string
		status       int
	}{
		// Before 1.52: the lists.
		{"/v1.50/system/df", `{"LayersSize":1000,"Images":[{"Containers":2,"Created":0,"Id":"i1","Labels":null,"ParentId":"","RepoDigests":null,"RepoTags":null,"SharedSize":100,"Size":600},` +
			`{"Containers":0,"Created":0,"Id":"i2","Labels":null,"ParentId":"","RepoDigests":null,"RepoTags":null,"SharedSize":100,"Size":500}],"Containers":[{"Id":"c1",`, 200},
		{"/v1.50/system/df", `"Volumes":[{"Driver":"","Labels":null,"Mountpoint":"","Name":"v1","Options":null,"Scope":"","UsageData":{"RefCount":1,"Size":7}}`, 200},
		{"/v1.50/system/df", `"BuildCache":[]}`, 200},
		{"/v1.50/system/df?type=volume", `{"Volumes":[{"Driver":"","Labels":null,"Mountpoint":"","Name":"v1"`, 200},
		// From 1.52: totals, reclaimable as the CLI reckons it, with
		// their lists as Items; and, without verbose, the lists of
		// before beside them (as Docker, dockerode's df() reads Images).
		{"/v1.52/system/df?verbose=1", `"ImageUsage":{"ActiveCount":1,"Items":[{"Containers":2,`, 200},
		{"/v1.52/system/df?verbose=1", `"Reclaimable":500,"TotalCount":2,"TotalSize":1000},` +
			`"ContainerUsage":{"ActiveCount":1,"Items":[{"Id":"c1",`, 200},
		{"/v1.52/system/df?verbose=1", `"Reclaimable":30,"TotalCount":2,"TotalSize":40},"VolumeUsage":{"ActiveCount":1,"Items":[{"Driver":"",`, 200},
		{"/v1.52/system/df?verbose=1", `"Reclaimable":5,"TotalCount":2,"TotalSize":12},"BuildCacheUsage":{}}`, 200},
		{"/v1.56/system/df", `{"LayersSize":1000,"Images":[{"Containers":2,`, 200},
		{"/system/df", `"BuildCache":[],"ImageUsage":{"ActiveCount":1,"Items":[{`, 200},
		{"/v1.52/system/df?type=volume&verbose=1", `{"VolumeUsage":{"ActiveCount":1,"Items":[{"Driver":"","Labels":null,"Mountpoint":"","Name":"v1"`, 200},
		{"/v1.52/system/df?type=volume", `{"Volumes":[{"Driver":"","Labels":null,"Mountpoint":"","Name":"v1"`, 200},
		{"/v1.52/system/df?type=disk", `{"message":"unknown object type: disk"}`, 400},
		{"/build/prune", `{"CachesDeleted":[],"SpaceReclaimed":0}`, 200},
	} {
		s := New(&fakeDiskUsage{}, Options{Logger: testLogger(t)})
		rec := httptest.NewRecorder()
		method := "GET"
		if strings.HasSuffix(tc.target, "prune") {
			method = "POST"
		}
		s.Handler().ServeHTTP(rec, httptest.NewRequest(method, tc.target, nil))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s %s = %d\n%s\nwant %d with\n%s", method, tc.target, rec.Code, rec.Body, tc.status, tc.want)
		}
	}
}
