package apiserver

import (
	"context"
	"io"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/volume"

	"github.com/hutch-engine/hutch/engine"
	"github.com/hutch-engine/hutch/engine/container"
)

// noContainers is a ContainerBackend that has no containers: every call is
// ErrNotImplemented. Fakes embed it and override what a test needs.
type noContainers struct{}

var errNoContainers = errdefs.ErrNotImplemented.WithMessage("fake: no containers")

func (noContainers) ContainerCreate(context.Context, engine.CreateRequest) (containertypes.CreateResponse, error) {
	return containertypes.CreateResponse{}, errNoContainers
}
func (noContainers) ContainerStart(context.Context, string) error { return errNoContainers }
func (noContainers) ContainerStop(context.Context, string, engine.StopRequest) error {
	return errNoContainers
}
func (noContainers) ContainerRestart(context.Context, string, engine.StopRequest) error {
	return errNoContainers
}
func (noContainers) ContainerKill(context.Context, string, string) error { return errNoContainers }
func (noContainers) ContainerWait(context.Context, string, engine.WaitRequest) (<-chan container.WaitResult, error) {
	return nil, errNoContainers
}
func (noContainers) ContainerLogs(context.Context, string, engine.LogsRequest, io.Writer, io.Writer) error {
	return errNoContainers
}
func (noContainers) ContainerInspect(context.Context, string) (containertypes.InspectResponse, error) {
	return containertypes.InspectResponse{}, errNoContainers
}
func (noContainers) ContainerList(context.Context, engine.ListRequest) ([]containertypes.Summary, error) {
	return nil, errNoContainers
}
func (noContainers) ContainerSize(context.Context, string) (int64, int64, error) {
	return 0, 0, errNoContainers
}
func (noContainers) RemoveLink(context.Context, string) error { return errdefs.ErrNotFound }

func (noContainers) ContainerRemove(context.Context, string, engine.RemoveRequest) error {
	return errNoContainers
}
func (noContainers) ContainerRename(context.Context, string, string) error { return errNoContainers }
func (noContainers) ContainerPrune(context.Context, string) (containertypes.PruneReport, error) {
	return containertypes.PruneReport{}, errNoContainers
}
func (noContainers) ContainerAttach(context.Context, string, engine.AttachRequest, io.Reader, io.Writer, io.Writer) error {
	return errNoContainers
}
func (noContainers) ContainerResize(context.Context, string, uint16, uint16) error {
	return errNoContainers
}
func (noContainers) ContainerTop(context.Context, string, string) (containertypes.TopResponse, error) {
	return containertypes.TopResponse{}, errNoContainers
}

func (noContainers) ExecCreate(context.Context, string, containertypes.ExecCreateRequest) (string, error) {
	return "", errNoContainers
}
func (noContainers) ExecStart(context.Context, string, engine.ExecStartRequest, io.Reader, io.Writer, io.Writer) error {
	return errNoContainers
}
func (noContainers) ExecInspect(context.Context, string) (containertypes.ExecInspectResponse, error) {
	return containertypes.ExecInspectResponse{}, errNoContainers
}
func (noContainers) ExecResize(context.Context, string, uint16, uint16) error {
	return errNoContainers
}

func (noContainers) ContainerStatPath(context.Context, string, string) (containertypes.PathStat, error) {
	return containertypes.PathStat{}, errNoContainers
}
func (noContainers) ContainerArchivePath(context.Context, string, string) (io.ReadCloser, containertypes.PathStat, error) {
	return nil, containertypes.PathStat{}, errNoContainers
}
func (noContainers) ContainerExtractToDir(context.Context, string, engine.ExtractRequest, io.Reader) error {
	return errNoContainers
}

func (noContainers) ContainerPause(context.Context, string) error   { return errNoContainers }
func (noContainers) ContainerUnpause(context.Context, string) error { return errNoContainers }

func (noContainers) NetworkCreate(context.Context, network.CreateRequest) (network.CreateResponse, error) {
	return network.CreateResponse{}, errNoContainers
}
func (noContainers) NetworkInspect(context.Context, string) (network.Inspect, error) {
	return network.Inspect{}, errNoContainers
}
func (noContainers) NetworkList(context.Context, string) ([]network.Summary, error) {
	return nil, errNoContainers
}
func (noContainers) NetworkRemove(context.Context, string) error { return errNoContainers }
func (noContainers) NetworkPrune(context.Context, string) (network.PruneReport, error) {
	return network.PruneReport{}, errNoContainers
}
func (noContainers) NetworkConnect(context.Context, string, network.ConnectRequest) error {
	return errNoContainers
}
func (noContainers) NetworkDisconnect(context.Context, string, network.DisconnectRequest) error {
	return errNoContainers
}

func (noContainers) VolumeCreate(context.Context, volume.CreateRequest) (volume.Volume, error) {
	return volume.Volume{}, errNoContainers
}
func (noContainers) VolumeInspect(context.Context, string) (volume.Volume, error) {
	return volume.Volume{}, errNoContainers
}
func (noContainers) VolumeList(context.Context, string) (volume.ListResponse, error) {
	return volume.ListResponse{}, errNoContainers
}
func (noContainers) VolumeRemove(context.Context, string, bool) error { return errNoContainers }
func (noContainers) VolumesPrune(context.Context, string, bool) (volume.PruneReport, error) {
	return volume.PruneReport{}, errNoContainers
}

func (noContainers) Events(context.Context, engine.EventsRequest, func(), func(events.Message) error) error {
	return errNoContainers
}

func (noContainers) SystemDiskUsage(context.Context) (engine.DiskUsage, error) {
	return engine.DiskUsage{}, errNoContainers
}

func (noContainers) ContainerUpdate(context.Context, string, containertypes.UpdateConfig) (containertypes.UpdateResponse, error) {
	return containertypes.UpdateResponse{}, errNoContainers
}

func (noContainers) ContainerStats(context.Context, string, engine.StatsRequest, func(containertypes.StatsResponse) error) error {
	return errNoContainers
}
