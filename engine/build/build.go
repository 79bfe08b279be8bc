// Package build runs Dockerfiles as Docker's classic builder does (POST
// /build, the builder the docker CLI uses when the daemon has no
// BuildKit): the stages up to the target are built in order, each
// instruction on the image the previous one made. RUN runs in a
// container whose changes are committed as a layer; COPY and ADD write
// into a container that is committed without running; the other
// instructions change only the config, committed as an empty layer with
// its history entry. Each step's image is kept, its parent the image
// before it, and is the step's cache: a later build whose step has the
// same parent, history entry and config takes it instead of running the
// step (COPY and ADD record a checksum of what they copy). The engine
// does the work through Backend; this package knows the Dockerfile, the
// build arguments and the output.
package build

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/hutch-engine/hutch/engine/build/buildctx"
	"github.com/hutch-engine/hutch/engine/container"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
)

// Request is one build.
type Request struct {
	// Dockerfile is the file's content.
	Dockerfile []byte
	// Context holds the files COPY and ADD read.
	Context *buildctx.Context
	// Tags name the final image.
	Tags []string
	// BuildArgs are --build-arg values; nil means "take it from the
	// environment", which the CLI has already done.
	BuildArgs map[string]*string
	// Labels are added to the final image's config.
	Labels map[string]string
	// Target is the stage to build (default: the last).
	Target string
	// Pull pulls every base image, even when it is local.
	Pull bool
	// NoCache runs every step, even those an earlier build made.
	NoCache bool
	// Quiet leaves the steps out of the output.
	Quiet bool
	// Remove removes each step's container once it succeeded; ForceRemove
	// removes it also when it failed.
	Remove, ForceRemove bool
	// NetworkMode and ExtraHosts are RUN containers' network settings.
	NetworkMode string
	ExtraHosts  []string
}

// Output receives the build's progress: lines of text, the progress of
// pulls, and the image of each stage built (the last one's is the
// build's). Stream may be called from several goroutines at once (a RUN's
// stdout and stderr).
type Output interface {
	Stream(text string)
	Progress(msg jsonstream.Message)
	ImageID(id string)
}

// Error is a failure of the Dockerfile or its build (a bad instruction, a
// RUN that failed, a missing file): the user's to fix, answered 400
// before output begins.
type Error struct {
	Msg string
	// Code is the exit code of the RUN that failed, else 0: Docker's
	// classic builder sends it as the errorDetail's code, and `docker
	// build` exits with it.
	Code int
}

func (e *Error) Error() string { return e.Msg }

// ExitCode is the failed RUN's exit code, for the progress stream.
func (e *Error) ExitCode() int { return e.Code }

// Unwrap makes it an invalid argument for the API's error mapping.
func (e *Error) Unwrap() error { return errdefs.ErrInvalidArgument }

func userErr(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Run builds req and returns the final image's ID.
func Run(ctx context.Context, be Backend, req Request, out Output) (string, error) {
	res, err := parser.Parse(bytes.NewReader(req.Dockerfile))
	if err != nil {
		return "", userErr("dockerfile parse error: %v", err)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return "", userErr("dockerfile parse error: %v", err)
	}
	if len(stages) == 0 {
		return "", userErr("the Dockerfile (Dockerfile) cannot be empty")
	}
	last := len(stages) - 1
	if req.Target != "" {
		i, ok := instructions.HasStage(stages, req.Target)
		if !ok {
			return "", userErr("target stage %q could not be found", req.Target)
		}
		last = i
	}
	b := &builder{
		be: be, req: req, out: out,
		lex:    shell.NewLex(res.EscapeToken),
		images: map[string]string{},
		used:   map[string]bool{},
	}
	b.total = len(metaArgs)
	for _, s := range stages[:last+1] {
		b.total += 1 + len(s.Commands)
	}
	b.total += len(req.Labels)
	if err := b.metaArgs(metaArgs); err != nil {
		return "", err
	}
	for i := range stages[:last+1] {
		if err := b.stage(ctx, &stages[i], i); err != nil {
			return "", err
		}
		if i == last {
			if err := b.labels(ctx); err != nil {
				return "", err
			}
		}
		// As Docker's classic builder, every stage ends with its image's
		// ID as aux (a quiet build sends none: only the final line).
		if !req.Quiet {
			out.ImageID(b.cur.image)
		}
	}
	final := b.cur.image
	if w := b.unusedArgs(); w != "" {
		b.stream("[Warning] %s\n", w)
	}
	b.stream("Successfully built %s\n", shortID(final))
	for _, t := range req.Tags {
		if err := be.Tag(ctx, final, t); err != nil {
			return final, err
		}
		b.stream("Successfully tagged %s\n", familiarTag(t))
	}
	if req.Quiet {
		// The one line of a quiet build: the CLI prints it.
		out.Stream(final + "\n")
	}
	return final, nil
}

// labels runs the --label options: as in Docker's classic builder, each
// is one more LABEL step of the last stage, in the order of the keys.
func (b *builder) labels(ctx context.Context) error {
	for _, k := range slices.Sorted(maps.Keys(b.req.Labels)) {
		text := "LABEL " + k + "=" + b.req.Labels[k]
		b.stepHeader(text)
		if err := b.commitConfig(ctx, text, func(c *containertypes.Config) {
			c.Labels = mergeLabels(c.Labels, map[string]string{k: b.req.Labels[k]})
		}); err != nil {
			return err
		}
		b.stream(" ---> %s\n", shortID(b.cur.image))
	}
	return nil
}

// builder is the state of one build.
type builder struct {
	be    Backend
	req   Request
	out   Output
	lex   *shell.Lex
	step  int
	total int
	// meta are the values of the ARGs before the first FROM.
	meta map[string]*string
	// images are the stages built so far, by name and by index.
	images map[string]string
	// used are the build arguments some ARG declared.
	used map[string]bool
	cur  *stageState
}

// stageState is the stage being built.
type stageState struct {
	image  string
	config containertypes.Config
	// args are the ARGs declared in this stage, with their values.
	args map[string]*string
	// argOrder keeps their declaration order for RUN's history.
	argOrder []string
	author   string
	// cmdSet is whether CMD was set in this stage (ENTRYPOINT then keeps
	// it).
	cmdSet bool
}

func (b *builder) stream(format string, args ...any) {
	if !b.req.Quiet {
		b.out.Stream(fmt.Sprintf(format, args...))
	}
}

// stepHeader announces an instruction.
func (b *builder) stepHeader(text string) {
	b.step++
	b.stream("Step %d/%d : %s\n", b.step, b.total, text)
}

// metaArgs takes the ARGs before the first FROM: they serve FROM lines.
func (b *builder) metaArgs(args []instructions.ArgCommand) error {
	b.meta = map[string]*string{}
	for _, a := range args {
		b.stepHeader(a.String())
		for _, kv := range a.Args {
			v := kv.Value
			if v != nil {
				x, err := b.expand(*v, b.metaEnv())
				if err != nil {
					return err
				}
				v = &x
			}
			if given, ok := b.req.BuildArgs[kv.Key]; ok && given != nil {
				v = given
			}
			b.meta[kv.Key] = v
			b.used[kv.Key] = true
		}
	}
	return nil
}

func (b *builder) metaEnv() []string {
	var env []string
	for k, v := range b.meta {
		if v != nil {
			env = append(env, k+"="+*v)
		}
	}
	return env
}

// expand substitutes variables in word as the Dockerfile's shell does.
func (b *builder) expand(word string, env []string) (string, error) {
	s, _, err := b.lex.ProcessWord(word, shell.EnvsFromSlice(env))
	if err != nil {
		return "", userErr("%v", err)
	}
	return s, nil
}

// unusedArgs is Docker's warning about --build-arg values no ARG
// declared ("" when all were).
func (b *builder) unusedArgs() string {
	var unused []string
	for k := range b.req.BuildArgs {
		if !b.used[k] && !predefinedArgs[k] {
			unused = append(unused, k)
		}
	}
	if len(unused) == 0 {
		return ""
	}
	sort.Strings(unused)
	return fmt.Sprintf("One or more build-args %v were not consumed", unused)
}

func shortID(id string) string {
	return container.ShortID(strings.TrimPrefix(id, "sha256:"))
}

// copyOutput sends a container's output to the build's stream, line by
// line as it comes.
type copyOutput struct{ b *builder }

func (w copyOutput) Write(p []byte) (int, error) {
	if len(p) > 0 {
		w.b.stream("%s", p)
	}
	return len(p), nil
}

var _ io.Writer = copyOutput{}

// familiarTag is how Docker's builder names a tag it made: short, and
// with the tag it got (latest when none was given).
func familiarTag(t string) string {
	named, err := reference.ParseNormalizedNamed(t)
	if err != nil {
		return t
	}
	return reference.FamiliarString(reference.TagNameOnly(named))
}
