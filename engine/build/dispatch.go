package build

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// dispatch applies one instruction to the current stage.
func (b *builder) dispatch(ctx context.Context, c instructions.Command) error {
	if x, ok := c.(instructions.SupportsSingleWordExpansion); ok {
		if _, isRun := c.(*instructions.RunCommand); !isRun {
			env := b.env()
			if err := x.Expand(func(w string) (string, error) { return b.expand(w, env) }); err != nil {
				return err
			}
		}
	}
	text := commandText(c)
	switch c := c.(type) {
	case *instructions.RunCommand:
		return b.run(ctx, c)
	case *instructions.CopyCommand:
		return b.copy(ctx, c)
	case *instructions.AddCommand:
		return b.add(ctx, c)
	case *instructions.WorkdirCommand:
		return b.workdir(ctx, c)
	case *instructions.ArgCommand:
		for _, kv := range c.Args {
			b.declareArg(kv)
		}
		return b.commitConfig(ctx, text, nil)
	case *instructions.EnvCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			for _, kv := range c.Env {
				cfg.Env = setEnv(cfg.Env, kv.Key, kv.Value)
			}
		})
	case *instructions.LabelCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			for _, kv := range c.Labels {
				cfg.Labels = mergeLabels(cfg.Labels, map[string]string{kv.Key: kv.Value})
			}
		})
	case *instructions.MaintainerCommand:
		b.cur.author = c.Maintainer
		return b.commitConfig(ctx, text, nil)
	case *instructions.CmdCommand:
		b.cur.cmdSet = true
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			cfg.Cmd = b.commandLine(c.ShellDependantCmdLine)
		})
	case *instructions.EntrypointCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			cfg.Entrypoint = b.commandLine(c.ShellDependantCmdLine)
			if !b.cur.cmdSet {
				cfg.Cmd = nil
			}
		})
	case *instructions.ExposeCommand:
		ports, err := b.exposed(c.Ports)
		if err != nil {
			return err
		}
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			if cfg.ExposedPorts == nil {
				cfg.ExposedPorts = network.PortSet{}
			}
			for _, p := range ports {
				cfg.ExposedPorts[p] = struct{}{}
			}
		})
	case *instructions.UserCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) { cfg.User = c.User })
	case *instructions.VolumeCommand:
		for _, v := range c.Volumes {
			if strings.TrimSpace(v) == "" {
				return userErr("VOLUME specified can not be an empty string")
			}
		}
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			if cfg.Volumes == nil {
				cfg.Volumes = map[string]struct{}{}
			}
			for _, v := range c.Volumes {
				cfg.Volumes[v] = struct{}{}
			}
		})
	case *instructions.StopSignalCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) { cfg.StopSignal = c.Signal })
	case *instructions.HealthCheckCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			h := *c.Health
			cfg.Healthcheck = &h
		})
	case *instructions.ShellCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) { cfg.Shell = c.Shell })
	case *instructions.OnbuildCommand:
		return b.commitConfig(ctx, text, func(cfg *containertypes.Config) {
			cfg.OnBuild = append(cfg.OnBuild, c.Expression)
		})
	}
	return userErr("%s is not supported by the classic builder", strings.ToUpper(c.Name()))
}

// shell is the stage's shell for shell-form commands.
func (b *builder) shell() []string {
	if len(b.cur.config.Shell) > 0 {
		return b.cur.config.Shell
	}
	return []string{"/bin/sh", "-c"}
}

// commandLine is the argv of a RUN, CMD or ENTRYPOINT.
func (b *builder) commandLine(c instructions.ShellDependantCmdLine) []string {
	if c.PrependShell {
		return append(append([]string{}, b.shell()...), strings.Join(c.CmdLine, " "))
	}
	return append([]string{}, c.CmdLine...)
}

func (b *builder) exposed(specs []string) ([]network.Port, error) {
	var out []network.Port
	for _, s := range specs {
		pr, err := network.ParsePortRange(s)
		if err != nil {
			return nil, userErr("invalid port %q in EXPOSE: %v", s, err)
		}
		for p := range pr.All() {
			out = append(out, p)
		}
	}
	return out, nil
}

// nopCmd is what a step's container records as its command: Docker's
// "#(nop)" form for instructions that run nothing.
func (b *builder) nopCmd(text string) []string {
	return append(append([]string{}, b.shell()...), "#(nop) ", text)
}

// commitConfig makes the image of an instruction that changes only the
// config (mutate, when not nil, changes it).
func (b *builder) commitConfig(ctx context.Context, text string, mutate func(*containertypes.Config)) error {
	return b.nopStep(ctx, text, mutate, nil)
}

// nopStep makes the image of an instruction that runs nothing: mutate
// changes the config, fill (when not nil) the step's container before
// its commit.
func (b *builder) nopStep(ctx context.Context, text string, mutate func(*containertypes.Config), fill func(id string) error) error {
	if mutate != nil {
		mutate(&b.cur.config)
	}
	createdBy := strings.Join(b.nopCmd(text), " ")
	if hit, err := b.cached(ctx, createdBy); hit || err != nil {
		return err
	}
	id, err := b.create(ctx, b.nopCmd(text), false)
	if err != nil {
		return err
	}
	if fill != nil {
		if err := fill(id); err != nil {
			b.removeContainer(ctx, id, false)
			return err
		}
	}
	return b.commit(ctx, id, createdBy, false)
}

// cached takes the image an earlier build made for the step that
// createdBy describes, on the current image with the current config.
func (b *builder) cached(ctx context.Context, createdBy string) (bool, error) {
	if b.req.NoCache {
		return false, nil
	}
	cfg := cloneConfig(b.cur.config)
	id, err := b.be.Cached(ctx, b.cur.image, createdBy, &cfg)
	if err != nil || id == "" {
		return false, err
	}
	b.stream(" ---> Using cache\n")
	b.cur.image = id
	return true, nil
}

// create makes a step's container of the current image: cmd is what it
// runs (run) or records.
func (b *builder) create(ctx context.Context, cmd []string, run bool) (string, error) {
	cfg := cloneConfig(b.cur.config)
	cfg.Image = b.cur.image
	cfg.Cmd = cmd
	cfg.Entrypoint = []string{}
	cfg.OnBuild = nil
	// A step is not probed: the image keeps its healthcheck (the commit
	// takes the stage's config), its containers run none.
	cfg.Healthcheck = &containertypes.HealthConfig{Test: []string{"NONE"}}
	hc := &containertypes.HostConfig{}
	if run {
		hc.NetworkMode = containertypes.NetworkMode(b.req.NetworkMode)
		hc.ExtraHosts = b.req.ExtraHosts
	}
	id, err := b.be.Create(ctx, &cfg, hc)
	if err != nil {
		return "", fmt.Errorf("creating the container of the step: %w", err)
	}
	return id, nil
}

// commit stores a step's container as the stage's new image, with the
// current config, and removes the container when the build says so.
func (b *builder) commit(ctx context.Context, id, createdBy string, ran bool) error {
	cfg := cloneConfig(b.cur.config)
	img, err := b.be.Commit(ctx, id, &cfg, createdBy, b.cur.author)
	if err != nil {
		b.removeContainer(ctx, id, true)
		return fmt.Errorf("committing the step: %w", err)
	}
	b.cur.image = img
	b.removeContainer(ctx, id, ran)
	return nil
}

// removeContainer removes a step's container once done with it; say is
// whether to tell (for those that ran).
func (b *builder) removeContainer(ctx context.Context, id string, say bool) {
	if !b.req.Remove && !b.req.ForceRemove {
		return
	}
	if err := b.be.Remove(context.WithoutCancel(ctx), id); err == nil && say {
		b.stream(" ---> Removed intermediate container %s\n", shortID(id))
	}
}

// run executes a RUN in a container of the current image and commits it.
func (b *builder) run(ctx context.Context, c *instructions.RunCommand) error {
	if len(c.FlagsUsed) > 0 {
		return buildKitOnly(c.FlagsUsed[0])
	}
	if len(c.Files) > 0 {
		return userErr("heredocs in RUN require BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled")
	}
	cmd := b.commandLine(c.ShellDependantCmdLine)
	recorded, hidden := b.runArgs()
	createdBy := strings.Join(cmd, " ")
	if len(recorded) > 0 {
		createdBy = fmt.Sprintf("|%d %s %s", len(recorded), strings.Join(recorded, " "), createdBy)
	}
	if hit, err := b.cached(ctx, createdBy); hit || err != nil {
		return err
	}
	saved := b.cur.config.Env
	b.cur.config.Env = append(append(append([]string{}, saved...), recorded...), hidden...)
	id, err := b.create(ctx, cmd, true)
	b.cur.config.Env = saved
	if err != nil {
		return err
	}
	b.stream(" ---> Running in %s\n", shortID(id))
	code, err := b.be.Run(ctx, id, copyOutput{b})
	if err == nil && code != 0 {
		err = &Error{Msg: fmt.Sprintf("The command '%s' returned a non-zero code: %d", strings.Join(cmd, " "), code), Code: code}
	}
	if err != nil {
		// A failed step's container stays for inspection unless
		// --force-rm; one the client gave up on goes, as in Docker.
		if b.req.ForceRemove || ctx.Err() != nil {
			b.be.Remove(context.WithoutCancel(ctx), id)
		}
		return err
	}
	return b.commit(ctx, id, createdBy, true)
}

// workdir sets the working directory, made in the image when missing.
func (b *builder) workdir(ctx context.Context, c *instructions.WorkdirCommand) error {
	dir := c.Path
	if !path.IsAbs(dir) {
		dir = path.Join("/", b.cur.config.WorkingDir, dir)
	}
	dir = path.Clean(dir)
	return b.nopStep(ctx, "WORKDIR "+dir,
		func(cfg *containertypes.Config) { cfg.WorkingDir = dir },
		func(id string) error { return b.mkdirAll(ctx, id, dir) })
}

// buildKitCopyFlags refuses the options of COPY and ADD only BuildKit has.
func buildKitCopyFlags(chmod string, link bool, exclude []string) error {
	switch {
	case chmod != "":
		return buildKitOnly("chmod")
	case link:
		return buildKitOnly("link")
	case len(exclude) > 0:
		return buildKitOnly("exclude")
	}
	return nil
}

func buildKitOnly(flag string) error {
	return userErr("the --%s option requires BuildKit. Refer to https://docs.docker.com/go/buildkit/ to learn how to build images with BuildKit enabled", flag)
}
