package apiserver

import (
	"context"
	"io"

	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/build"
	"github.com/hutch-engine/hutch/engine/images"
)

// The image half of noContainers: every image call is ErrNotImplemented
// too. Image tests embed fakeBackend and override what they need.

func (noContainers) ImagePull(context.Context, images.PullRequest, func(jsonstream.Message)) error {
	return errNoContainers
}
func (noContainers) ImageList(context.Context, images.ListRequest) ([]image.Summary, error) {
	return nil, errNoContainers
}
func (noContainers) ImageInspect(context.Context, string, *ocispec.Platform) (images.Detail, error) {
	return images.Detail{}, errNoContainers
}
func (noContainers) ImageHistory(context.Context, string, *ocispec.Platform) ([]image.HistoryResponseItem, error) {
	return nil, errNoContainers
}
func (noContainers) ImageAttestations(context.Context, string, images.AttestationRequest) ([]image.AttestationStatement, error) {
	return nil, errNoContainers
}
func (noContainers) ImageTag(context.Context, string, string, string) error { return errNoContainers }
func (noContainers) ImageRemove(context.Context, string, images.RemoveRequest) ([]image.DeleteResponse, error) {
	return nil, errNoContainers
}
func (noContainers) ImagePrune(context.Context, string) (image.PruneReport, error) {
	return image.PruneReport{}, errNoContainers
}
func (noContainers) ImageImport(context.Context, images.ImportRequest, io.Reader, func(jsonstream.Message)) error {
	return errNoContainers
}
func (noContainers) ImageLoad(context.Context, io.Reader, images.LoadRequest, func(jsonstream.Message)) error {
	return errNoContainers
}
func (noContainers) ImageSave(context.Context, []string, []ocispec.Platform, io.Writer) error {
	return errNoContainers
}
func (noContainers) RegistryLogin(context.Context, registry.AuthConfig) (registry.AuthResponse, error) {
	return registry.AuthResponse{}, errNoContainers
}
func (noContainers) DistributionInspect(context.Context, string, registry.AuthConfig) (registry.DistributionInspect, error) {
	return registry.DistributionInspect{}, errNoContainers
}
func (noContainers) SearchImages(context.Context, string, int, string, registry.AuthConfig) ([]registry.SearchResult, error) {
	return nil, errNoContainers
}
func (noContainers) Build(context.Context, engine.BuildRequest, io.Reader, build.Output) (string, error) {
	return "", errNoContainers
}
