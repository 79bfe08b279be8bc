package buildkit

import (
	"github.com/moby/buildkit/util/tracing"
	"github.com/moby/buildkit/util/tracing/detect"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
)

// tracer records the spans of BuildKit's calls in memory, as buildkitd
// does, so that each build's history record carries its trace (what
// `docker buildx history trace` shows). The client's trace context, sent
// with its calls, makes the engine's spans children of the client's.
type tracer struct {
	tp *sdktrace.TracerProvider
}

func newTracer() *tracer {
	if detect.Recorder == nil {
		detect.Recorder = detect.NewTraceRecorder()
	}
	return &tracer{tp: sdktrace.NewTracerProvider(sdktrace.WithSyncer(detect.Recorder))}
}

// serverOption instruments the gRPC server with the recorder's provider.
func (t *tracer) serverOption() grpc.ServerOption {
	return grpc.StatsHandler(tracing.ServerStatsHandler(
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
	))
}

// collector is where the controller sends spans clients export to it.
func (t *tracer) collector() sdktrace.SpanExporter { return detect.Recorder }
