package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds each process a check starts; they normally take a
// few milliseconds.
const probeTimeout = 5 * time.Second

func checkUserNS(ctx context.Context, env *Env) []Item {
	it := Item{Check: CheckUserNS, Name: "user namespaces", Required: true}
	if env.Rootful {
		it.Detail = rootNotNeeded
		return []Item{it}
	}
	if detail, fix := userNSSysctls(env.ProcSys); detail != "" {
		it.Status, it.Detail, it.Fix = Missing, detail, fix
		return []Item{it}
	}
	it.Detail = "allowed by the kernel's settings"
	if !env.Probe {
		return []Item{it}
	}
	truePath, err := env.LookPath("true")
	if err != nil {
		it.Detail += " (not tried: no true(1) on PATH)"
		return []Item{it}
	}
	if err := runInUserNS(ctx, 0, "", truePath); err != nil {
		it.Status = Missing
		it.Detail = fmt.Sprintf("the kernel's settings allow them, but creating one failed: %v (a seccomp or security profile forbids it)", err)
		it.Fix = "if hutch runs in a container, start that container with --security-opt seccomp=unconfined --security-opt apparmor=unconfined " +
			"(Kubernetes: a privileged pod); elsewhere ask the administrator which LSM or seccomp policy blocks clone(CLONE_NEWUSER)"
		return []Item{it}
	}
	it.Detail = "allowed, and a user namespace was created"
	return []Item{it}
}

// userNSSysctls reads the kernel switches that forbid unprivileged user
// namespaces under procSys and returns the first one that does, with its
// fix; "" when none does.
func userNSSysctls(procSys string) (detail, fix string) {
	v, err := readSysctl(procSys, "user/max_user_namespaces")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the kernel has no user namespaces (no " + filepath.Join(procSys, "user/max_user_namespaces") + ")",
			"boot a kernel built with CONFIG_USER_NS=y"
	case err != nil:
		return err.Error(), "make " + filepath.Join(procSys, "user/max_user_namespaces") + " readable"
	case v <= 0:
		return fmt.Sprintf("user.max_user_namespaces is %d", v),
			"run as root: sysctl -w user.max_user_namespaces=15000 (and persist it in /etc/sysctl.d/)"
	}
	// Debian and Ubuntu kernels before 6.x have their own switch.
	v, err = readSysctl(procSys, "kernel/unprivileged_userns_clone")
	if err == nil && v != 1 {
		return fmt.Sprintf("kernel.unprivileged_userns_clone is %d", v),
			"run as root: sysctl -w kernel.unprivileged_userns_clone=1 (and persist it in /etc/sysctl.d/)"
	}
	// Ubuntu 23.10 and later: AppArmor lets unconfined programs create a user
	// namespace but takes every capability away inside it.
	v, err = readSysctl(procSys, "kernel/apparmor_restrict_unprivileged_userns")
	if err == nil && v != 0 {
		return fmt.Sprintf("kernel.apparmor_restrict_unprivileged_userns is %d: AppArmor strips capabilities in user namespaces of unconfined programs", v),
			"run as root: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give hutch an AppArmor profile that allows it: " +
				"printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile hutch " + hutchPath() +
				" flags=(unconfined) {\\n  userns,\\n}\\n' > /etc/apparmor.d/hutch && apparmor_parser -r /etc/apparmor.d/hutch"
	}
	return "", ""
}

// hutchPath is the binary an AppArmor profile must name.
func hutchPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "/usr/local/bin/hutch"
}

// readSysctl reads an integer under procSys, e.g. "user/max_user_namespaces".
func readSysctl(procSys, name string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(procSys, name))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(procSys, name), err)
	}
	return v, nil
}

// runInUserNS runs a command in dir in a new user namespace (plus extra
// clone flags) where the caller's ids are 0, as rootlesskit's child will be,
// and returns its output in the error when it fails.
func runInUserNS(ctx context.Context, extra uintptr, dir, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | extra,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		// An unprivileged process may only write gid_map after
		// denying setgroups.
		GidMappingsEnableSetgroups: false,
	}
	return runQuiet(cmd)
}

// runQuiet runs cmd and puts the first line of its output into the error.
func runQuiet(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	if line := firstLine(string(out)); line != "" {
		return fmt.Errorf("%w: %s", err, line)
	}
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
