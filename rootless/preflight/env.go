package preflight

// Env is everything the checks read from the system. DefaultEnv fills it
// from the running process; tests point the paths at fake files and leave
// Probe off.
type Env struct {
	UID, GID int    // effective ids of the daemon's user
	User     string // login name, "" when the uid has no passwd entry
	// Rootful is real root (euid 0 with CAP_SYS_ADMIN in the initial user
	// namespace): hutch runs without rootlesskit and most checks do not
	// apply.
	Rootful bool

	SubUIDFile, SubGIDFile string // /etc/subuid, /etc/subgid
	ProcSys                string // /proc/sys
	CgroupRoot             string // /sys/fs/cgroup
	SelfCgroup             string // /proc/self/cgroup
	TunDevice              string // /dev/net/tun
	FuseDevice             string // /dev/fuse
	Kernel                 string // kernel release, as uname -r prints it

	RuntimeDir string // the value of $XDG_RUNTIME_DIR, "" when unset
	RunUser    string // /run/user, parent of the logind runtime dirs
	TmpDir     string // $TMPDIR or /tmp, for the last runtime dir fallback
	// DataDir is hutch's data root; the overlay probe runs on its file
	// system (or the nearest existing parent's), where storage will live.
	DataDir string

	// LookPath finds helper binaries; nil means exec.LookPath.
	LookPath func(file string) (string, error)
	// Probe lets the checks start processes in new namespaces (user
	// namespace creation, an overlay mount) and run slirp4netns --version
	// instead of trusting files alone.
	Probe bool
}
