//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	controlapi "github.com/moby/buildkit/api/services/control"
	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/client/llb"
	"go.opentelemetry.io/otel/sdk/trace"
)

// BuildKit's own client given the daemon's address speaks gRPC in HTTP/2
// straight on the socket, without Docker's /grpc upgrade (buildctl
// --addr, and the history API that buildx's history commands use):
// Docker's daemon serves it beside the API, and so does hutch. A build's
// history record carries the trace of its calls.
func TestBuildKitGRPCOnSocket(t *testing.T) {
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The client's span makes the build a trace of its own.
	tp := trace.NewTracerProvider()
	defer tp.Shutdown(ctx)
	ctx, span := tp.Tracer("hutch-test").Start(ctx, "build")
	defer span.End()

	bc, err := bkclient.New(ctx, "unix://"+d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	workers, err := bc.ListWorkers(ctx)
	if err != nil || len(workers) != 1 {
		t.Fatalf("workers %v, %v", workers, err)
	}
	def, err := llb.Scratch().File(llb.Mkfile("/hello", 0o644, []byte("hi"))).Marshal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bc.Solve(ctx, def, bkclient.SolveOpt{Ref: "hutch-grpc-test"}, nil)
	if err != nil {
		t.Fatalf("solve: %v", err)
	}
	if res == nil {
		t.Fatal("no solve response")
	}
	// The trace is written to the record after the build ends.
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec := historyRecord(ctx, t, bc, "hutch-grpc-test")
		if rec.Trace != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history record of the build has no trace: %+v", rec)
		}
		time.Sleep(time.Second)
	}
}

func historyRecord(ctx context.Context, t *testing.T, bc *bkclient.Client, ref string) *controlapi.BuildHistoryRecord {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := bc.ControlClient().ListenBuildHistory(ctx, &controlapi.BuildHistoryRequest{Ref: ref, EarlyExit: true})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := sub.Recv()
	if err != nil {
		t.Fatalf("history of %s: %v", ref, err)
	}
	if ev.Record == nil || ev.Record.Ref != ref {
		t.Fatalf("history event %+v", ev)
	}
	return ev.Record
}
