package apiserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/volume"
)

// fakeVolumes records the volume calls and answers from fixed data.
type fakeVolumes struct {
	fakeBackend
	calls []string
}

func (f *fakeVolumes) VolumeCreate(_ context.Context, req volume.CreateRequest) (volume.Volume, error) {
	f.calls = append(f.calls, fmt.Sprintf("create %s %s %v", req.Name, req.Driver, req.Labels))
	if req.Driver == "nfs" {
		return volume.Volume{}, errdefs.ErrNotFound.WithMessage(`plugin "nfs" not found`)
	}
	return volume.Volume{Name: req.Name, Driver: "local", Scope: "local"}, nil
}

func (f *fakeVolumes) VolumeInspect(_ context.Context, name string) (volume.Volume, error) {
	f.calls = append(f.calls, "inspect "+name)
	if name != "v1" {
		return volume.Volume{}, errdefs.ErrNotFound.WithMessage("get " + name + ": no such volume")
	}
	return volume.Volume{Name: "v1", Driver: "local", Mountpoint: "/data/volumes/v1/_data"}, nil
}

func (f *fakeVolumes) VolumeList(_ context.Context, filters string) (volume.ListResponse, error) {
	f.calls = append(f.calls, "list "+filters)
	return volume.ListResponse{Volumes: []volume.Volume{{Name: "v1"}}, Warnings: []string{}}, nil
}

func (f *fakeVolumes) VolumeRemove(_ context.Context, name string, force bool) error {
	f.calls = append(f.calls, fmt.Sprintf("remove %s %v", name, force))
	if name == "busy" {
		return errdefs.ErrConflict.WithMessage("remove busy: volume is in use - [abc]")
	}
	return nil
}

func (f *fakeVolumes) VolumesPrune(_ context.Context, filters string, all bool) (volume.PruneReport, error) {
	f.calls = append(f.calls, fmt.Sprintf("prune %s %v", filters, all))
	return volume.PruneReport{VolumesDeleted: []string{"p1"}, SpaceReclaimed: 10}, nil
}

func TestVolumeRoutes(t *testing.T) {
	checkRoutes(t, func() (Backend, *[]string) {
		f := &fakeVolumes{}
		return f, &f.calls
	}, []routeTest{
		{"POST", "/volumes/create", `{"Name":"v1","Labels":{"a":"b"}}`, 201, "create v1  map[a:b]", `"Name":"v1"`},
		{"POST", "/v1.41/volumes/create", `{"Name":"v2","Driver":"nfs"}`, 404, "create v2 nfs map[]", `plugin \"nfs\" not found`},
		{"POST", "/volumes/create", `{"Name":`, 400, "", "invalid JSON"},
		{"POST", "/volumes/create", `{"Name":1}`, 400, "", "invalid JSON"},
		{"GET", "/volumes", "", 200, "list ", `"Volumes":[{`},
		{"GET", "/volumes/", "", 200, "list ", `"Warnings":[]`},
		{"GET", `/volumes?filters={"dangling":{"true":true}}`, "", 200, `list {"dangling":{"true":true}}`, `"Name":"v1"`},
		{"GET", "/volumes/v1", "", 200, "inspect v1", `"Mountpoint":"/data/volumes/v1/_data"`},
		{"GET", "/volumes/nosuch", "", 404, "inspect nosuch", "get nosuch: no such volume"},
		{"DELETE", "/volumes/v1", "", 204, "remove v1 false", ""},
		{"DELETE", "/volumes/v1?force=1", "", 204, "remove v1 true", ""},
		{"DELETE", "/volumes/busy", "", 409, "remove busy false", "volume is in use"},
		{"POST", "/volumes/prune", "", 200, "prune  false", `"VolumesDeleted":["p1"],"SpaceReclaimed":10`},
		// Before API 1.42, prune took named volumes too.
		{"POST", "/v1.41/volumes/prune", "", 200, "prune  true", `"VolumesDeleted":["p1"]`},
		{"POST", `/v1.44/volumes/prune?filters={"all":{"true":true}}`, "", 200, `prune {"all":{"true":true}} false`, `"VolumesDeleted":["p1"]`},
	})
}
