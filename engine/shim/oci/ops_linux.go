package oci

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// execFifo is libcontainer's name for the fifo its init waits on.
const execFifo = "exec.fifo"

// create makes the container with its init waiting on the exec fifo. The
// init outlives this process: it is reparented to the shim, a subreaper,
// which releases it through the fifo.
func create(cfg *wire.Config, bundle string, files map[string]*os.File, log *slog.Logger) (*wire.RuntimeReply, error) {
	host := shim.DetectHost()
	spec, seccomp, err := loadSpec(bundle, host, log)
	if err != nil {
		return nil, err
	}
	log.Debug("spec loaded")
	c, prog, err := createContainer(cfg, spec, seccomp, host)
	if err != nil {
		return nil, err
	}
	log.Debug("container created")
	p, err := newProcess(spec.Process, true)
	if err != nil {
		_ = c.Destroy()
		return nil, err
	}
	setStdio(p, files)
	if p.ConsoleSocket != nil {
		p.ConsoleHeight, p.ConsoleWidth = cfg.Height, cfg.Width
	}
	pf, err := passSeccomp(p, prog)
	if err != nil {
		_ = c.Destroy()
		return nil, err
	}
	if pf != nil {
		defer pf.Close()
	}
	if err := c.Start(p); err != nil {
		_ = c.Destroy()
		return nil, wire.NewStartError(err.Error())
	}
	pid, err := p.Pid()
	if err != nil {
		_ = c.Signal(os.Kill)
		_ = c.Destroy()
		return nil, err
	}
	log.Debug("init started", "pid", pid)
	stateDir := filepath.Join(cfg.StateDir, cfg.ID)
	return &wire.RuntimeReply{
		Response:    wire.Response{Pid: pid},
		Fifo:        filepath.Join(stateDir, execFifo),
		StateDir:    stateDir,
		NeedsDelete: needsDelete(c),
	}, nil
}

// needsDelete reports whether removing the stopped container takes more
// than removing its state directory: a cgroup of its own to delete (and,
// with a shared pid namespace, processes in it to kill), or hooks to run.
// Rootless on cgroup v1 it has neither, and the shim saves the exec of
// hutch-runtime at the container's end.
func needsDelete(c *libcontainer.Container) bool {
	cfg := c.Config()
	if len(cfg.Hooks) > 0 || cfg.IntelRdt != nil {
		return true
	}
	st, err := c.State()
	if err != nil {
		return true
	}
	for _, p := range st.CgroupPaths {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// setStdio gives p the files the shim sent.
func setStdio(p *libcontainer.Process, files map[string]*os.File) {
	if f := files[wire.FileStdin]; f != nil {
		p.Stdin = f
	}
	if f := files[wire.FileStdout]; f != nil {
		p.Stdout = f
	}
	if f := files[wire.FileStderr]; f != nil {
		p.Stderr = f
	}
	if f := files[wire.FileConsole]; f != nil {
		p.ConsoleSocket = f
	}
}

// load finds the container of cfg.
func load(cfg *wire.Config) (*libcontainer.Container, error) {
	c, err := libcontainer.Load(cfg.StateDir, cfg.ID)
	if errors.Is(err, libcontainer.ErrNotExist) {
		return nil, fmt.Errorf("container %s: %w", cfg.ID, errdefs.ErrNotFound)
	}
	return c, err
}

// execProcess starts process in the running container; like the init, it
// is reparented to the shim when this process exits.
func execProcess(cfg *wire.Config, process wire.RawJSON, files map[string]*os.File) (*wire.RuntimeReply, error) {
	var sp specs.Process
	if err := json.Unmarshal(process, &sp); err != nil || len(sp.Args) == 0 {
		return nil, fmt.Errorf("exec needs a process with args: %w", errdefs.ErrInvalidArgument)
	}
	c, err := load(cfg)
	if err != nil {
		return nil, err
	}
	p, err := newProcess(&sp, false)
	if err != nil {
		return nil, err
	}
	setStdio(p, files)
	prog, err := execSeccomp(cfg, c)
	if err != nil {
		return nil, err
	}
	pf, err := passSeccomp(p, prog)
	if err != nil {
		return nil, err
	}
	if pf != nil {
		defer pf.Close()
	}
	if err := c.Run(p); err != nil {
		return nil, wire.NewStartError(err.Error())
	}
	pid, err := p.Pid()
	if err != nil {
		return nil, err
	}
	return &wire.RuntimeReply{Response: wire.Response{Pid: pid}}, nil
}

// freeze pauses or resumes every process of the container through its
// cgroup freezer.
func freeze(cfg *wire.Config, pause bool) error {
	c, err := load(cfg)
	if err != nil {
		return err
	}
	if pause {
		err = c.Pause()
	} else {
		err = c.Resume()
	}
	if err != nil {
		return fmt.Errorf("cgroup freezer: %v: %w", err, errdefs.ErrFailedPrecondition)
	}
	return nil
}

// destroy removes the stopped container, first reading from its memory
// cgroup whether the OOM killer struck.
func destroy(cfg *wire.Config) (*wire.RuntimeReply, error) {
	c, err := load(cfg)
	if errdefs.IsNotFound(err) {
		return &wire.RuntimeReply{}, nil
	}
	if err != nil {
		return nil, err
	}
	reply := &wire.RuntimeReply{}
	if st, err := c.State(); err == nil {
		reply.OOMKilled = oomKilled(st.CgroupPaths)
	}
	if err := c.Destroy(); err != nil {
		return nil, err
	}
	return reply, nil
}

// oomKilled reads the oom_kill count of the memory cgroup: in
// memory.events on cgroup v2 (the unified path has key ""), in
// memory.oom_control on v1.
func oomKilled(paths map[string]string) bool {
	file := ""
	switch {
	case paths[""] != "":
		file = filepath.Join(paths[""], "memory.events")
	case paths["memory"] != "":
		file = filepath.Join(paths["memory"], "memory.oom_control")
	default:
		return false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if ok && string(k) == "oom_kill" {
			n, _ := strconv.Atoi(string(v))
			return n > 0
		}
	}
	return false
}
