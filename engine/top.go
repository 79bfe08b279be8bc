package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	eventtypes "github.com/moby/moby/api/types/events"
	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/internal/procstat"
)

// ContainerTop lists the processes of a running container, as `ps -ef`
// shows them: those in the pid namespace of the container's init.
func (e *Engine) ContainerTop(ctx context.Context, ref, psArgs string) (containertypes.TopResponse, error) {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return containertypes.TopResponse{}, err
	}
	client := e.runs.client(c.ID)
	if !c.State.Running() || client == nil {
		return containertypes.TopResponse{}, errdefs.ErrConflict.WithMessage(fmt.Sprintf("container %s is not running", c.ID))
	}
	pids, err := containerProcesses(client.Pid(), sharesPIDs(c))
	if err != nil {
		return containertypes.TopResponse{}, fmt.Errorf("container %s: %w", c.ID, err)
	}
	var top containertypes.TopResponse
	if psArgs == "" || psArgs == "-ef" || psArgs == "-f" {
		// The default, read from /proc without running ps.
		top = containertypes.TopResponse{Titles: []string{"UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"}, Processes: [][]string{}}
		boot := bootTime()
		for _, pid := range pids {
			if row := psRow(pid, boot); row != nil {
				top.Processes = append(top.Processes, row)
			}
		}
	} else if top, err = psTop(ctx, psArgs, pids); err != nil {
		return containertypes.TopResponse{}, err
	}
	e.containerEvent(c, eventtypes.ActionTop, nil)
	return top, nil
}

// psTop runs ps with the client's options, as Docker does, and keeps the
// rows of the container's processes: those whose PID column is one of
// pids, the last column keeping its spaces.
func psTop(ctx context.Context, psArgs string, pids []string) (containertypes.TopResponse, error) {
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, "ps", strings.Fields(psArgs)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return containertypes.TopResponse{}, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("Error running ps: %v: %s", err, strings.TrimSpace(stderr.String())))
	}
	return parsePS(string(out), pids)
}

// parsePS reads the output of ps as Docker does.
func parsePS(out string, pids []string) (containertypes.TopResponse, error) {
	lines := strings.Split(out, "\n")
	top := containertypes.TopResponse{Titles: strings.Fields(lines[0]), Processes: [][]string{}}
	pidCol := slices.Index(top.Titles, "PID")
	if pidCol < 0 {
		return containertypes.TopResponse{}, errdefs.ErrInvalidArgument.WithMessage("Couldn't find PID field in ps output")
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < len(top.Titles) || !slices.Contains(pids, f[pidCol]) {
			continue
		}
		last := len(top.Titles) - 1
		top.Processes = append(top.Processes, append(f[:last:last], strings.Join(f[last:], " ")))
	}
	return top, nil
}

// sharesPIDs tells whether c runs in a pid namespace that is not its own
// (--pid host or container:<id>).
func sharesPIDs(c *container.Container) bool {
	return c.HostConfig != nil && (c.HostConfig.PidMode.IsHost() || c.HostConfig.PidMode.IsContainer())
}

// containerProcesses are the pids of the processes in the pid namespace of
// the container whose init is initPid: in a namespace it shares (shared,
// or ours with --pid host), the init and its descendants only.
func containerProcesses(initPid int, shared bool) ([]string, error) {
	nsOf := func(pid string) string {
		l, _ := os.Readlink(filepath.Join("/proc", pid, "ns", "pid"))
		return l
	}
	initNS := nsOf(strconv.Itoa(initPid))
	if initNS == "" {
		return nil, errors.New("cannot read its pid namespace")
	}
	self := nsOf("self")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, ent := range ents {
		pid := ent.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		ns := nsOf(pid)
		if ns != initNS || ((shared || ns == self) && pid != strconv.Itoa(initPid) && !descendantOf(pid, initPid)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

func descendantOf(pid string, ancestor int) bool {
	for i := 0; i < 64; i++ {
		f := statFields(pid)
		if len(f) < 2 {
			return false
		}
		pid = f[1]
		if pid == strconv.Itoa(ancestor) {
			return true
		}
		if pid == "0" || pid == "1" {
			return false
		}
	}
	return false
}

// psRow renders one process like ps -ef.
func psRow(pid string, boot time.Time) []string {
	comm, f, ok := procstat.Read(pid)
	if !ok || len(f) < 20 {
		return nil
	}
	ppid := f[1]
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	start, _ := strconv.ParseInt(f[19], 10, 64)
	cpu := time.Duration(utime+stime) * time.Second / ticks
	started := boot.Add(time.Duration(start) * time.Second / ticks)
	uid := "?"
	if status, err := os.ReadFile(filepath.Join("/proc", pid, "status")); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				if fs := strings.Fields(rest); len(fs) > 0 {
					uid = fs[0]
				}
			}
		}
	}
	if uid == "0" {
		uid = "root"
	}
	cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	args := strings.TrimRight(strings.ReplaceAll(string(cmd), "\x00", " "), " ")
	if args == "" {
		args = "[" + comm + "]"
	}
	stimeCol := started.Format("15:04")
	if time.Since(started) > 24*time.Hour {
		stimeCol = started.Format("Jan02")
	}
	h, m, sec := int(cpu.Hours()), int(cpu.Minutes())%60, int(cpu.Seconds())%60
	return []string{uid, pid, ppid, "0", stimeCol, "?", fmt.Sprintf("%02d:%02d:%02d", h, m, sec), args}
}

func bootTime() time.Time {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return time.Now()
	}
	return time.Now().Add(-time.Duration(info.Uptime) * time.Second)
}
