package rootless

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/rootless-containers/rootlesskit/v3/cmd/rootlesskit/unshare"
	"github.com/rootless-containers/rootlesskit/v3/pkg/child"
	"github.com/rootless-containers/rootlesskit/v3/pkg/common"
	"github.com/rootless-containers/rootlesskit/v3/pkg/copyup/tmpfssymlink"
	"github.com/rootless-containers/rootlesskit/v3/pkg/network/slirp4netns"
	"github.com/rootless-containers/rootlesskit/v3/pkg/port/builtin"
	"github.com/sirupsen/logrus"
)

// Dispatch runs the roles of the tree that are not hutch's own code: the
// rootlesskit child and rootlesskit's embedded unshare(1). It returns only in
// the host and engine roles; otherwise it exits the process.
func Dispatch() {
	logrus.SetLevel(logrus.WarnLevel)
	if os.Getenv("HUTCH_DEBUG") != "" {
		logrus.SetLevel(logrus.DebugLevel)
	}
	switch CurrentRole() {
	case Unshare:
		unshare.Main()
		os.Exit(0)
	case Child:
		if err := runChild(); err != nil {
			// The engine already said why it stopped; keep its exit code.
			code, ok := common.GetExecExitStatus(err)
			if !ok {
				fmt.Fprintf(os.Stderr, "hutch: namespace child: %v\n", err)
				code = 1
			}
			os.Exit(code)
		}
		os.Exit(0)
	}
}

func runChild() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	network := os.Getenv(envNetwork) == "1"
	opt := child.Opt{
		PipeFDEnvKey:              envPipeFD,
		RunActivationHelperEnvKey: envRunActivation,
		ChildUseActivationEnvKey:  envChildActivation,
		StateDirEnvKey:            EnvStateDir,
		TargetCmd:                 append([]string{exe}, os.Args[1:]...),
		CopyUpDriver:              tmpfssymlink.NewChildDriver(),
		CopyUpDirs:                []string{"/etc", "/run"},
		DetachNetNS:               network,
		Propagation:               "rprivate",
	}
	if network {
		opt.NetworkDriver = slirp4netns.NewChildDriver()
		opt.PortDriver = builtin.NewChildDriver(debugWriter{slog.Default().With("component", "port")})
	}
	return child.Child(opt)
}
