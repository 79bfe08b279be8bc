package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/distribution/reference"
	"github.com/docker/distribution/registry/api/errcode"
	v2 "github.com/docker/distribution/registry/api/v2"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"go.podman.io/image/v5/docker"
)

// ErrUnauthorized marks failures caused by the registry refusing the
// credentials (or asking for some). Pull errors carrying it are classed
// errdefs.ErrUnknown, as Docker answers them with 500: a 401 from
// POST /images/create makes the docker CLI prompt for a login; a pull
// made without credentials becomes Docker's 404 "pull access denied"
// instead (anonymousPullError). POST /auth can test for it with
// errors.Is and answer 401.
var ErrUnauthorized = errors.New("registry authentication failed")

// classifyPullError gives a registry error the class and message Docker's
// daemon gives it; other errors are returned unchanged.
func classifyPullError(err error, named reference.Named) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	ec := registryError(err)
	switch ec.Code {
	case errcode.ErrorCodeDenied:
		return fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login': %s%.0w",
			reference.FamiliarName(named), ec.Error(), errdefs.ErrNotFound)
	case v2.ErrorCodeManifestUnknown:
		return fmt.Errorf("manifest for %s not found: %s%.0w", reference.FamiliarString(named), ec.Error(), errdefs.ErrNotFound)
	case v2.ErrorCodeNameUnknown:
		return fmt.Errorf("repository %s not found: %s%.0w", reference.FamiliarName(named), ec.Error(), errdefs.ErrNotFound)
	case errcode.ErrorCodeUnauthorized:
		return fmt.Errorf("%w%.0w%.0w", err, ErrUnauthorized, errdefs.ErrUnknown)
	}
	var creds docker.ErrUnauthorizedForCredentials
	if errors.As(err, &creds) {
		return fmt.Errorf("%w%.0w%.0w", err, ErrUnauthorized, errdefs.ErrUnknown)
	}
	var status docker.UnexpectedHTTPStatusError
	if errors.As(err, &status) && status.StatusCode == 404 {
		return fmt.Errorf("%w%.0w", err, errdefs.ErrNotFound)
	}
	return err
}

// anonymousPullError classes a refusal of a pull made without credentials
// as Docker does: to an anonymous client a repository it may not read is
// one that does not exist, so the answer is a 404 with Docker's "pull
// access denied", which tells the user about docker login. Other errors
// are returned unchanged.
func anonymousPullError(err error, named reference.Named) error {
	if !errors.Is(err, ErrUnauthorized) {
		return err
	}
	cause := err.Error()
	if ec := registryError(err); ec.Code != 0 {
		cause = ec.Error()
	}
	return fmt.Errorf("pull access denied for %s, repository does not exist or may require 'docker login': %s%.0w",
		reference.FamiliarName(named), cause, errdefs.ErrNotFound)
}

// anonymous reports whether auth holds no credentials.
func anonymous(auth registry.AuthConfig) bool {
	return auth.Username == "" && auth.Password == "" && auth.IdentityToken == "" && auth.RegistryToken == ""
}

// registryError is the registry's error code and message in err: an
// errcode.Error (from the response body) or, for some 401s, a bare
// errcode.ErrorCode. Its Code is zero, no registered code, for other
// errors.
func registryError(err error) errcode.Error {
	var ec errcode.Error
	if errors.As(err, &ec) {
		return ec
	}
	var code errcode.ErrorCode
	if errors.As(err, &code) {
		return errcode.Error{Code: code, Message: code.Message()}
	}
	return errcode.Error{}
}

// noMatchingManifest is Docker's error for a list without the platform.
func noMatchingManifest(osName, arch, variant string) error {
	p := osName + "/" + arch
	if variant != "" {
		p += "/" + variant
	}
	return fmt.Errorf("no matching manifest for %s in the manifest list entries%.0w", p, errdefs.ErrNotFound)
}

// dockerError is an error whose message Docker prints verbatim, capital
// letter included, with its class.
type dockerError struct {
	msg   string
	class error
}

func (e *dockerError) Error() string { return e.msg }
func (e *dockerError) Unwrap() error { return e.class }

// noSuchImage is Docker's error for an unknown image reference.
func noSuchImage(ref string) error {
	return &dockerError{msg: "No such image: " + ref, class: errdefs.ErrNotFound}
}

// schema1Error is Docker's refusal of schema 1 images.
func schema1Error(named reference.Named) error {
	return &dockerError{class: errdefs.ErrInvalidArgument, msg: "Docker Image Format v1 and Docker Image manifest version 2, schema 1 support has been removed. " +
		"Suggest the author of " + named.String() + " to upgrade the image to the OCI Format or Docker Image manifest v2, schema 2. " +
		"More information at https://docs.docker.com/go/deprecated-image-specs/"}
}

// noPlatform is Docker's answer for a multi-platform image ref without
// content for platform want.
func noPlatform(ref string, want ocispec.Platform) error {
	msg := "image with reference " + ref + " was found but does not provide "
	if want.OS != "" {
		msg += "the specified platform (" + platforms.FormatAll(want) + ")"
	} else {
		msg += "any platform"
	}
	return errdefs.ErrNotFound.WithMessage(msg)
}
