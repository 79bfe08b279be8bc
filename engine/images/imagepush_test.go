package images

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"

	"github.com/hutch-engine/hutch/engine/imagestore/imagestoretest"
)

// pushStore records what is pushed.
type pushStore struct {
	*imagestoretest.Fake
	pushed []string
}

func (s *pushStore) PushImage(_ context.Context, id, name string, _ registry.AuthConfig, progress func(jsonstream.Message)) error {
	s.pushed = append(s.pushed, id+" "+name)
	progress(jsonstream.Message{Status: "pushed " + name})
	return nil
}

func TestImagePush(t *testing.T) {
	a, b := imagestoretest.Image(1, "127.0.0.1:5000/x:1", "127.0.0.1:5000/x:2"), imagestoretest.Image(2, "127.0.0.1:5000/x:latest", "docker.io/library/other:1")
	tests := []struct {
		name   string
		req    PushRequest
		pushed []string
		class  error
	}{
		{"a tag", PushRequest{Name: "127.0.0.1:5000/x", Tag: "2"}, []string{a.ID + " 127.0.0.1:5000/x:2"}, nil},
		{"a tag in the name", PushRequest{Name: "127.0.0.1:5000/x:latest"}, []string{b.ID + " 127.0.0.1:5000/x:latest"}, nil},
		{"every tag of the repository", PushRequest{Name: "127.0.0.1:5000/x"},
			[]string{a.ID + " 127.0.0.1:5000/x:1", a.ID + " 127.0.0.1:5000/x:2", b.ID + " 127.0.0.1:5000/x:latest"}, nil},
		{"unknown tag", PushRequest{Name: "127.0.0.1:5000/x", Tag: "3"}, nil, errdefs.ErrNotFound},
		{"unknown repository", PushRequest{Name: "nope"}, nil, errdefs.ErrNotFound},
		{"bad name", PushRequest{Name: "UPPER"}, nil, errdefs.ErrInvalidArgument},
		{"bad tag", PushRequest{Name: "x", Tag: "a:b"}, nil, errdefs.ErrInvalidArgument},
		{"digest", PushRequest{Name: "x@sha256:" + strings.Repeat("a", 64)}, nil, errdefs.ErrInvalidArgument},
		{"no registry host", PushRequest{Name: "a_b.c/d", Tag: "1"}, nil, errdefs.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &pushStore{Fake: imagestoretest.New(a, b)}
			e := New(Options{Store: store})
			var msgs []string
			err := e.ImagePush(context.Background(), tc.req, func(m jsonstream.Message) { msgs = append(msgs, m.Status) })
			if tc.class != nil {
				if !errors.Is(err, tc.class) || len(msgs) > 0 || len(store.pushed) > 0 {
					t.Errorf("err = %v (messages %q, pushed %q), want %v before any message", err, msgs, store.pushed, tc.class)
				}
				return
			}
			if err != nil || !slices.Equal(store.pushed, tc.pushed) {
				t.Fatalf("pushed %q, %v; want %q", store.pushed, err, tc.pushed)
			}
			if len(msgs) == 0 || msgs[0] != "The push refers to repository [127.0.0.1:5000/x]" {
				t.Errorf("stream = %q", msgs)
			}
		})
	}
}

func TestImageInspectParent(t *testing.T) {
	parent, child := imagestoretest.Image(1), imagestoretest.Image(2, "docker.io/library/child:1")
	child.Parent = parent.ID
	e := listService(t, "", parent, child)
	for _, tc := range []struct{ ref, want string }{{"child:1", parent.ID}, {parent.ID, ""}} {
		resp, err := e.ImageInspect(context.Background(), tc.ref, nil)
		if err != nil || resp.Parent != tc.want {
			t.Errorf("inspect %s: Parent %q, %v; want %q", tc.ref, resp.Parent, err, tc.want)
		}
	}
}
