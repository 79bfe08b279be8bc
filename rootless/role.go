package rootless

import (
	"os"
	"strings"
)

// Environment keys shared by the processes of the tree. The pipe and
// activation keys belong to rootlesskit's parent/child handshake.
const (
	envPipeFD          = "_HUTCH_ROOTLESSKIT_PIPEFD"
	envChildActivation = "_HUTCH_ROOTLESSKIT_ACTIVATION_CHILD"
	envRunActivation   = "_HUTCH_ROOTLESSKIT_ACTIVATION_HELPER"
	// EnvPipeFD holds the child's ends of the handshake pipes ("3,4"); the
	// child unsets it once the namespaces are ready.
	EnvPipeFD = envPipeFD
	// EnvStateDir is set in every process inside the namespaces: it holds
	// rootlesskit's state dir (api.sock, netns, resolv.conf).
	EnvStateDir = "ROOTLESSKIT_STATE_DIR"
	// envParentEUID carries the host uid into the namespace.
	envParentEUID = "ROOTLESSKIT_PARENT_EUID"
	envParentEGID = "ROOTLESSKIT_PARENT_EGID"
	// envMode tells the engine which id mapping the parent set up.
	envMode = "_HUTCH_IDMAP_MODE"
	// envNetwork is "1" when the parent serves a detached network namespace.
	envNetwork = "_HUTCH_NETWORK"
	// envHost carries `hutch daemon`'s hand-over to hutch-ns (Handover, JSON).
	envHost = "_HUTCH_NS_HOST"
	// envEngine is the hutch binary the namespace child runs as the engine.
	envEngine = "_HUTCH_ENGINE"
	// envKeeper is the daemon's state dir in a namespace child that keeps
	// the namespaces for the engines (live restore, package
	// rootless/keeper), and envKeeperLog its log level.
	envKeeper    = "_HUTCH_KEEPER"
	envKeeperLog = "_HUTCH_KEEPER_LOG"
	// envKeeperBin is the hutch-keeper the namespace child execs, found
	// by the keeper's parent.
	envKeeperBin = "_HUTCH_KEEPER_BIN"
)

// Role is the part a process plays in the tree.
type Role int

const (
	// Host is a process in the host's namespaces.
	Host Role = iota
	// Child is rootlesskit's child: it finishes the namespace set-up
	// (package rootless/child), then serves the API as the engine.
	Child
	// Engine runs inside the namespaces and serves the API.
	Engine
)

// CurrentRole reads the role from the environment.
func CurrentRole() Role {
	switch {
	case os.Getenv(envPipeFD) != "":
		return Child
	case os.Getenv(EnvStateDir) != "":
		return Engine
	}
	return Host
}

// KeeperChild returns the state dir, the log level and the hutch-keeper
// binary to exec when this process is the namespace child of a
// live-restore daemon's keeper (hutch-ns).
func KeeperChild() (stateDir, logLevel, bin string, ok bool) {
	v := os.Getenv(envKeeper)
	return v, os.Getenv(envKeeperLog), os.Getenv(envKeeperBin), v != "" && CurrentRole() == Child
}

// InsideEnv is the environment (KEY=value) that tells a process started
// inside the namespaces which part it plays: a keeper hands it to each
// engine it starts. Its keys stay the same across versions, so a newer
// engine understands an older keeper.
func InsideEnv() []string {
	var out []string
	for _, k := range []string{EnvStateDir, envParentEUID, envParentEGID, envMode, envNetwork} {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// KeptShape reads, from an InsideEnv list, the id mapping and whether a
// detached network namespace is served: what a keeper's namespaces were
// made with.
func KeptShape(env []string) (IDMap, bool) {
	idmap, network := IDMapFull, false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case envMode:
			if IDMap(v) == IDMapSingle {
				idmap = IDMapSingle
			}
		case envNetwork:
			network = v == "1"
		}
	}
	return idmap, network
}

// Inside reports whether this process runs inside hutch's namespaces.
func Inside() bool { return os.Getenv(EnvStateDir) != "" }

// StateDir is rootlesskit's state directory, or "" outside the namespaces.
func StateDir() string { return os.Getenv(EnvStateDir) }

// Network reports whether the parent serves a detached network namespace
// (at $ROOTLESSKIT_STATE_DIR/netns).
func Network() bool { return os.Getenv(envNetwork) == "1" }
