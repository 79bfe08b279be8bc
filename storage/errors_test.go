package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/docker/distribution/registry/api/errcode"
	v2 "github.com/docker/distribution/registry/api/v2"
	"go.podman.io/image/v5/docker"
)

func TestClassifyPullError(t *testing.T) {
	// containers/image wraps registry errors on their way up.
	wrap := func(err error) error {
		return fmt.Errorf("reading manifest nope in docker.io/library/busybox: %w", err)
	}
	tests := []struct {
		name    string
		ref     string
		err     error
		classes []error
		message string
	}{
		{"denied", "busybox", wrap(errcode.ErrorCodeDenied.WithMessage("requested access to the resource is denied")),
			[]error{errdefs.ErrNotFound},
			"pull access denied for busybox, repository does not exist or may require 'docker login': denied: requested access to the resource is denied"},
		{"manifest unknown", "busybox:nope", wrap(v2.ErrorCodeManifestUnknown.WithMessage("manifest unknown")),
			[]error{errdefs.ErrNotFound}, "manifest for busybox:nope not found: manifest unknown: manifest unknown"},
		{"name unknown", "localhost:5000/nothere", wrap(v2.ErrorCodeNameUnknown.WithMessage("repository name not known to registry")),
			[]error{errdefs.ErrNotFound}, "repository localhost:5000/nothere not found: name unknown: repository name not known to registry"},
		{"unauthorized", "localhost:5000/private", wrap(errcode.ErrorCodeUnauthorized.WithMessage("authentication required")),
			[]error{ErrUnauthorized, errdefs.ErrUnknown}, "reading manifest nope in docker.io/library/busybox: unauthorized: authentication required"},
		{"bare unauthorized code", "localhost:5000/private", wrap(errcode.ErrorCodeUnauthorized),
			[]error{ErrUnauthorized, errdefs.ErrUnknown}, "reading manifest nope in docker.io/library/busybox: unauthorized"},
		{"bare denied code", "busybox", wrap(errcode.ErrorCodeDenied),
			[]error{errdefs.ErrNotFound}, "pull access denied for busybox, repository does not exist or may require 'docker login': denied: requested access to the resource is denied"},
		{"bad credentials", "localhost:5000/private", wrap(docker.ErrUnauthorizedForCredentials{Err: errors.New("401")}),
			[]error{ErrUnauthorized, errdefs.ErrUnknown}, "reading manifest nope in docker.io/library/busybox: unable to retrieve auth token: invalid username/password: 401"},
		{"canceled", "busybox", wrap(context.Canceled), []error{context.Canceled}, "reading manifest nope in docker.io/library/busybox: context canceled"},
		{"other", "busybox", errors.New("connection refused"), nil, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			named, err := parsePullReference(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			got := classifyPullError(tt.err, named)
			for _, c := range tt.classes {
				if !errors.Is(got, c) {
					t.Errorf("%v is not %v", got, c)
				}
			}
			if len(tt.classes) == 0 && (errdefs.IsNotFound(got) || errors.Is(got, ErrUnauthorized)) {
				t.Errorf("%v got a class it should not have", got)
			}
			if got.Error() != tt.message {
				t.Errorf("message %q\n   want %q", got.Error(), tt.message)
			}
		})
	}
}
