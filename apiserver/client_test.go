package apiserver

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"
)

// failSwitch is a fakeBackend whose Info can be made to fail while the
// server runs.
type failSwitch struct {
	fakeBackend
	fail atomic.Bool
}

func (f *failSwitch) Info(ctx context.Context) (*system.Info, error) {
	if f.fail.Load() {
		return nil, errdefs.ErrNotFound.WithMessage("gone")
	}
	return f.fakeBackend.Info(ctx)
}

// TestGoSDK drives the server with the real Go SDK over a unix socket, the
// way docker CLI and SDK users reach the daemon, and stops it through Serve's
// context.
func TestGoSDK(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hutch.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	backend := &failSwitch{}
	s := New(backend, Options{Version: "1.2.3"})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()

	cli, err := client.New(client.WithHost("unix://" + sock))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	ping, err := cli.Ping(t.Context(), client.PingOptions{NegotiateAPIVersion: true})
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if ping.APIVersion != MaxAPIVersion || ping.OSType != "linux" || ping.Experimental || ping.BuilderVersion != "1" {
		t.Errorf("Ping = %+v", ping)
	}
	if got := cli.ClientVersion(); got != MaxAPIVersion {
		t.Errorf("negotiated version = %q, want %q", got, MaxAPIVersion)
	}

	v, err := cli.ServerVersion(t.Context(), client.ServerVersionOptions{})
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	if v.Version != "0.0.0-test" || v.APIVersion != MaxAPIVersion || v.MinAPIVersion != MinAPIVersion {
		t.Errorf("ServerVersion = %+v", v)
	}

	info, err := cli.Info(t.Context(), client.InfoOptions{})
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Info.ID != "fake-id" || info.Info.Name != "fakehost" {
		t.Errorf("Info = %+v", info.Info)
	}

	// The SDK turns our error bodies back into classed errors.
	backend.fail.Store(true)
	if _, err := cli.Info(t.Context(), client.InfoOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("Info with failing backend: %v, want a NotFound error", err)
	}

	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve after cancel = %v, want nil", err)
	}
	if _, err := net.Dial("unix", sock); err == nil {
		t.Error("socket still accepts connections after Serve returned")
	}
}
