package preflight

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultEnv describes the running process and the real system.
func DefaultEnv() Env {
	uid, gid := os.Geteuid(), os.Getegid()
	env := Env{
		UID:        uid,
		GID:        gid,
		SubUIDFile: "/etc/subuid",
		SubGIDFile: "/etc/subgid",
		ProcSys:    "/proc/sys",
		CgroupRoot: "/sys/fs/cgroup",
		SelfCgroup: "/proc/self/cgroup",
		TunDevice:  "/dev/net/tun",
		FuseDevice: "/dev/fuse",
		RuntimeDir: os.Getenv("XDG_RUNTIME_DIR"),
		RunUser:    "/run/user",
		TmpDir:     os.TempDir(),
		DataDir:    defaultDataDir(),
		Probe:      true,
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		env.User = u.Username
	}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		env.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	if uid == 0 {
		env.Rootful = RealRoot()
		if env.Rootful {
			env.DataDir = "/var/lib/hutch"
		}
	}
	return env
}

// RealRoot reports whether this process is root in the initial user
// namespace with CAP_SYS_ADMIN: hutch then runs without rootlesskit
// (docs/design.md, Process model). Root without CAP_SYS_ADMIN (a container's root: CI jobs in
// unprivileged containers and pods) cannot mount, and runs rootless as
// any user does.
func RealRoot() bool {
	if os.Geteuid() != 0 {
		return false
	}
	uidMap, _ := os.ReadFile("/proc/self/uid_map")
	status, _ := os.ReadFile("/proc/self/status")
	return initialUserNS(string(uidMap)) && hasCap(string(status), unix.CAP_SYS_ADMIN)
}

// defaultDataDir is $XDG_DATA_HOME/hutch, else ~/.local/share/hutch
// (docs/design.md, Contract).
func defaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hutch")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "share", "hutch")
}

// initialUserNS reports whether a uid_map is the identity map of the whole
// id space, which only the initial user namespace has.
func initialUserNS(uidMap string) bool {
	lines := strings.Split(strings.TrimSpace(uidMap), "\n")
	if len(lines) != 1 {
		return false
	}
	f := strings.Fields(lines[0])
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// hasCap reports whether the CapEff line of /proc/self/status has bit cap.
func hasCap(status string, cp int) bool {
	for line := range strings.Lines(status) {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		return err == nil && v&(1<<uint(cp)) != 0
	}
	return false
}
