// Command bkctl is the bench's client for builds on hutch: it does for
// hutch what `buildctl build` does for buildkitd, so that the build
// phase (contrib/bench/build.go) compares the engines with the same
// client on both sides.
//
//	DOCKER_HOST=unix:///…/docker.sock bkctl [-opt key=value]… [-t name] [-solve] CONTEXT
//
// It speaks BuildKit's control API with BuildKit's Go client, as buildctl
// does, over the Docker API as buildx's docker driver reaches Docker's
// daemon (driver/docker): POST /grpc upgraded to h2c for the control API,
// POST /session upgraded for the session (the build context, the auth
// provider). The build is buildctl's: Client.Build, whose function solves
// the "dockerfile.v0" frontend with the options (-opt) through the
// gateway, the directory CONTEXT as the locals "context" and
// "dockerfile", an auth provider attached, the result exported as buildx's
// docker driver exports it: the "moby" exporter, named -t. -solve asks
// Client.Solve for the frontend instead (one round trip less: no
// ListWorkers, no gateway).
//
// Two parts are written here rather than imported, as their packages need
// modules hutch's go.mod does not have: the auth provider answers every
// registry anonymously (buildctl's reads $DOCKER_CONFIG, which the bench
// leaves empty, and the bench's builds on hutch reach no registry), and the
// progress is written to stderr as `buildctl --progress=rawjson` writes it,
// each SolveStatus JSON-encoded on a line of its own (progressui's
// rawJSONDisplay). One difference: buildctl (and buildx) shift the daemon's
// times so that the first step seems to start when the client began the
// solve (progresswriter.ResetTime; a daemon may run on another clock),
// while bkctl writes them as the daemon reports them: the engine runs on
// this machine, and the bench cuts the client's wall time at those times.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	bkclient "github.com/moby/buildkit/client"
	gateway "github.com/moby/buildkit/frontend/gateway/client"
	"github.com/moby/buildkit/identity"
	"github.com/moby/buildkit/session"
	"github.com/moby/buildkit/session/auth"
	dockerclient "github.com/moby/moby/client"
	"github.com/tonistiigi/fsutil"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
)

// opts are the -opt flags, in order.
type opts []string

func (o *opts) String() string { return strings.Join(*o, " ") }

func (o *opts) Set(s string) error {
	if !strings.Contains(s, "=") {
		return fmt.Errorf("%q is not key=value", s)
	}
	*o = append(*o, s)
	return nil
}

func main() {
	var frontendOpts opts
	var tag string
	var solve bool
	flag.Var(&frontendOpts, "opt", "an option of the frontend, key=value (repeated)")
	flag.StringVar(&tag, "t", "", "the image's name (the moby exporter's name)")
	flag.BoolVar(&solve, "solve", false, "Client.Solve with the frontend instead of buildctl's Client.Build through the gateway")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: DOCKER_HOST=unix://SOCKET bkctl [-opt key=value]… [-t name] [-solve] CONTEXT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := build(ctx, flag.Arg(0), frontendOpts, tag, solve); err != nil {
		fmt.Fprintln(os.Stderr, "bkctl:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, dir string, frontendOpts []string, tag string, solve bool) error {
	// The Docker API client ($DOCKER_HOST) only dials: a hijacked request
	// asks for no API version, so no /_ping goes before it.
	api, err := dockerclient.New(dockerclient.FromEnv)
	if err != nil {
		return err
	}
	defer api.Close()
	c, err := bkclient.New(ctx, "",
		bkclient.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return api.DialHijack(ctx, "/grpc", "h2c", nil)
		}),
		bkclient.WithSessionDialer(func(ctx context.Context, proto string, meta map[string][]string) (net.Conn, error) {
			return api.DialHijack(ctx, "/session", proto, meta)
		}))
	if err != nil {
		return err
	}
	defer c.Close()

	fs, err := fsutil.NewFS(dir)
	if err != nil {
		return err
	}
	attrs := map[string]string{}
	for _, o := range frontendOpts {
		k, v, _ := strings.Cut(o, "=")
		attrs[k] = v
	}
	var exports []bkclient.ExportEntry
	if tag != "" {
		exports = []bkclient.ExportEntry{{Type: "moby", Attrs: map[string]string{"name": tag}}}
	}
	so := bkclient.SolveOpt{
		Exports:       exports,
		LocalMounts:   map[string]fsutil.FS{"context": fs, "dockerfile": fs},
		FrontendAttrs: attrs,
		Session:       []session.Attachable{anonymous{}},
		Ref:           identity.NewID(),
	}

	// The client closes the channel when the build ends; the printer
	// writes everything until then, as buildctl's does.
	status := make(chan *bkclient.SolveStatus)
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		if solve {
			so.Frontend = "dockerfile.v0"
			_, err := c.Solve(ctx, nil, so, status)
			return err
		}
		_, err := c.Build(ctx, so, "bkctl", func(ctx context.Context, gc gateway.Client) (*gateway.Result, error) {
			return gc.Solve(ctx, gateway.SolveRequest{Frontend: "dockerfile.v0", FrontendOpt: attrs})
		}, status)
		return err
	})
	eg.Go(func() error {
		enc := json.NewEncoder(os.Stderr)
		for s := range status {
			_ = enc.Encode(s)
		}
		return nil
	})
	err = eg.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

// anonymous is the session's auth provider: no credentials for any
// registry (BuildKit then asks the registry for an anonymous token
// itself); tokens are not fetched for the daemon.
type anonymous struct {
	auth.UnimplementedAuthServer
}

func (anonymous) Register(s *grpc.Server) { auth.RegisterAuthServer(s, anonymous{}) }

func (anonymous) Credentials(context.Context, *auth.CredentialsRequest) (*auth.CredentialsResponse, error) {
	return &auth.CredentialsResponse{}, nil
}
