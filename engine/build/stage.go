package build

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	containertypes "github.com/moby/moby/api/types/container"
)

// predefinedArgs are usable with --build-arg without an ARG, as Docker's
// proxy variables are; they stay out of the image's history.
var predefinedArgs = map[string]bool{
	"HTTP_PROXY": true, "http_proxy": true, "HTTPS_PROXY": true, "https_proxy": true,
	"FTP_PROXY": true, "ftp_proxy": true, "NO_PROXY": true, "no_proxy": true,
	"ALL_PROXY": true, "all_proxy": true,
}

// stage builds one stage: FROM, the base image's ONBUILD triggers, then
// its instructions.
func (b *builder) stage(ctx context.Context, s *instructions.Stage, index int) error {
	b.stepHeader(s.SourceCode)
	base, err := b.expand(s.BaseName, b.metaEnv())
	if err != nil {
		return err
	}
	img, err := b.baseImage(ctx, base)
	if err != nil {
		return err
	}
	b.cur = &stageState{image: img.ID, config: cloneConfig(img.Config), args: map[string]*string{}}
	b.stream(" ---> %s\n", shortID(img.ID))
	if triggers := b.cur.config.OnBuild; len(triggers) > 0 {
		b.cur.config.OnBuild = nil
		if err := b.onBuild(ctx, triggers); err != nil {
			return err
		}
	}
	for _, c := range s.Commands {
		b.stepHeader(commandText(c))
		if err := b.dispatch(ctx, c); err != nil {
			return err
		}
		b.stream(" ---> %s\n", shortID(b.cur.image))
	}
	b.images[strconv.Itoa(index)] = b.cur.image
	if s.Name != "" {
		b.images[strings.ToLower(s.Name)] = b.cur.image
	}
	return nil
}

// baseImage resolves a FROM: an earlier stage by name, else an image.
func (b *builder) baseImage(ctx context.Context, name string) (Image, error) {
	if id, ok := b.images[strings.ToLower(name)]; ok {
		return b.be.Image(ctx, id, false, b.out)
	}
	if strings.EqualFold(name, Scratch) {
		return b.be.Image(ctx, Scratch, false, b.out)
	}
	return b.be.Image(ctx, name, b.req.Pull, b.out)
}

// onBuild runs the base image's ONBUILD triggers before the stage's own
// instructions.
func (b *builder) onBuild(ctx context.Context, triggers []string) error {
	s := ""
	if len(triggers) > 1 {
		s = "s"
	}
	b.stream("# Executing %d build trigger%s\n", len(triggers), s)
	for _, t := range triggers {
		res, err := parser.Parse(strings.NewReader(t))
		if err != nil || len(res.AST.Children) != 1 {
			return userErr("bad ONBUILD trigger %q: %v", t, err)
		}
		c, err := instructions.ParseCommand(res.AST.Children[0])
		if err != nil {
			return userErr("bad ONBUILD trigger %q: %v", t, err)
		}
		if err := b.dispatch(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func commandText(c instructions.Command) string {
	if s, ok := c.(fmt.Stringer); ok {
		return s.String()
	}
	return c.Name()
}

// env is what variables in the stage's instructions expand to: the
// config's environment, then the declared build arguments it does not
// set.
func (b *builder) env() []string {
	env := slices.Clone(b.cur.config.Env)
	set := map[string]bool{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		set[k] = true
	}
	for _, k := range b.cur.argOrder {
		if v := b.cur.args[k]; v != nil && !set[k] {
			env = append(env, k+"="+*v)
		}
	}
	return env
}

// runArgs are the build arguments a RUN sees beyond the config's
// environment: declared ones with a value (recorded in the history, as
// "|N k=v …", sorted) and the predefined proxy ones (not recorded).
func (b *builder) runArgs() (recorded, hidden []string) {
	set := map[string]bool{}
	for _, e := range b.cur.config.Env {
		k, _, _ := strings.Cut(e, "=")
		set[k] = true
	}
	for k, v := range b.cur.args {
		if v != nil && !set[k] {
			recorded = append(recorded, k+"="+*v)
		}
	}
	sort.Strings(recorded)
	for k, v := range b.req.BuildArgs {
		if predefinedArgs[k] && v != nil && b.cur.args[k] == nil && !set[k] {
			hidden = append(hidden, k+"="+*v)
		}
	}
	sort.Strings(hidden)
	return recorded, hidden
}

// declareArg handles one ARG name[=default].
func (b *builder) declareArg(kv instructions.KeyValuePairOptional) {
	v := kv.Value
	if v == nil {
		if m, ok := b.meta[kv.Key]; ok {
			v = m
		}
	}
	if given, ok := b.req.BuildArgs[kv.Key]; ok && given != nil {
		v = given
	}
	if _, ok := b.cur.args[kv.Key]; !ok {
		b.cur.argOrder = append(b.cur.argOrder, kv.Key)
	}
	b.cur.args[kv.Key] = v
	b.used[kv.Key] = true
}

// cloneConfig copies a config deeply enough for the builder to change it.
func cloneConfig(c containertypes.Config) containertypes.Config {
	c.Env = slices.Clone(c.Env)
	c.Cmd = slices.Clone(c.Cmd)
	c.Entrypoint = slices.Clone(c.Entrypoint)
	c.Shell = slices.Clone(c.Shell)
	c.OnBuild = slices.Clone(c.OnBuild)
	c.Labels = maps.Clone(c.Labels)
	c.Volumes = maps.Clone(c.Volumes)
	c.ExposedPorts = maps.Clone(c.ExposedPorts)
	if c.Healthcheck != nil {
		h := *c.Healthcheck
		h.Test = slices.Clone(h.Test)
		c.Healthcheck = &h
	}
	return c
}

// setEnv sets k=v in env, replacing an earlier value.
func setEnv(env []string, k, v string) []string {
	for i, e := range env {
		if ek, _, _ := strings.Cut(e, "="); ek == k {
			env[i] = k + "=" + v
			return env
		}
	}
	return append(env, k+"="+v)
}

func mergeLabels(dst, add map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, add)
	return dst
}
