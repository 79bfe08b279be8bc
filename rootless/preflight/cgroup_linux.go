package preflight

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

const limitsLost = "resource limits (--memory, --cpus, --pids-limit) cannot be enforced rootless"

const delegateFix = "run as root: mkdir -p /etc/systemd/system/user@.service.d && " +
	"printf '[Service]\\nDelegate=cpu cpuset io memory pids\\n' > /etc/systemd/system/user@.service.d/delegate.conf && " +
	"systemctl daemon-reload, then log in again"

// limitFlags are the controllers rootless limits need and the docker run
// flags each one enforces.
var limitFlags = []struct{ controller, flag string }{
	{"memory", "--memory"},
	{"cpu", "--cpus"},
	{"pids", "--pids-limit"},
}

// checkCgroup reports whether resource limits can work: rootless they need
// cgroup v2 with the controllers delegated to the user.
func checkCgroup(_ context.Context, env *Env) []Item {
	it := Item{Check: CheckCgroup, Name: "cgroup"}
	root := env.CgroupRoot
	if !exists(filepath.Join(root, "cgroup.controllers")) {
		mode := "cgroup v1"
		if exists(filepath.Join(root, "unified")) {
			mode = "cgroup v1 (hybrid)"
		}
		if env.Rootful {
			it.Detail = mode + ": running as root, limits use the v1 controllers"
			return []Item{it}
		}
		it.Status = Warning
		it.Detail = mode + ": " + limitsLost
		it.Fix = "boot with systemd.unified_cgroup_hierarchy=1 on the kernel command line"
		return []Item{it}
	}
	if env.Rootful {
		it.Detail = "cgroup v2: running as root"
		return []Item{it}
	}
	dir := delegatedCgroup(env)
	if dir == "" {
		it.Status = Warning
		it.Detail = fmt.Sprintf("cgroup v2, but no cgroup is delegated to uid %d (no user@%d.service): %s", env.UID, env.UID, limitsLost)
		name := env.User
		if name == "" {
			name = strconv.Itoa(env.UID)
		}
		it.Fix = "run as root: loginctl enable-linger " + name + ", then log in through systemd-logind so that user@" + strconv.Itoa(env.UID) + ".service runs"
		return []Item{it}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		it.Status = Warning
		it.Detail = fmt.Sprintf("cgroup v2: %v: %s", err, limitsLost)
		it.Fix = delegateFix
		return []Item{it}
	}
	have := strings.Fields(string(b))
	var missing, flags []string
	for _, l := range limitFlags {
		if !slices.Contains(have, l.controller) {
			missing = append(missing, l.controller)
			flags = append(flags, l.flag)
		}
	}
	if len(missing) > 0 {
		it.Status = Warning
		it.Detail = fmt.Sprintf("cgroup v2: %s has the controllers [%s], not %s, so %s cannot be enforced",
			dir, strings.Join(have, " "), strings.Join(missing, ", "), strings.Join(flags, ", "))
		it.Fix = delegateFix
		return []Item{it}
	}
	it.Detail = fmt.Sprintf("cgroup v2, delegated: %s has [%s]", dir, strings.Join(have, " "))
	return []Item{it}
}

// delegatedCgroup is the cgroup the user may create children in: systemd's
// user@UID.service, else the process's own cgroup when the user owns it
// (a CI container with a cgroup namespace); "" when there is none.
func delegatedCgroup(env *Env) string {
	uid := strconv.Itoa(env.UID)
	dir := filepath.Join(env.CgroupRoot, "user.slice", "user-"+uid+".slice", "user@"+uid+".service")
	if exists(dir) {
		return dir
	}
	b, err := os.ReadFile(env.SelfCgroup)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::")
		if !ok {
			continue
		}
		dir = filepath.Join(env.CgroupRoot, p)
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) == nil && int(st.Uid) == env.UID {
			return dir
		}
	}
	return ""
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
