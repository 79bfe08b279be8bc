//go:build !linux

package network

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
)

// Options configures a Driver.
type Options struct {
	DetachedNetNS, SandboxDir, PortAPI, Uplink string
	HostGateway, Nameserver                    netip.Addr
	Logger                                     *slog.Logger
}

// Driver exists on Linux only.
type Driver struct{}

// New fails: networks need Linux namespaces.
func New(ctx context.Context, o Options) (*Driver, error) {
	return nil, errors.New("hutch's networks need Linux")
}
