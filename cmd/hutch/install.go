package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/internal/install"
	"github.com/urfave/cli/v2"
)

func installCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "run hutch as a systemd service started by its socket, and add the docker context hutch",
		Description: "Writes hutch.socket and hutch.service (user units; system units as root), enables and starts the socket:\n" +
			"the first connection starts the daemon, which exits after --idle-exit with nothing to do. Running it again changes nothing.\n" +
			"Without systemd it creates the context and tells how to start the daemon by hand.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "idle-exit", Value: "5m", Usage: "the service's --idle-exit: how long the daemon stays with no container running and no client (0: stays up)"},
			&cli.BoolFlag{Name: "use", Usage: "make hutch the docker CLI's current context"},
		},
		Action: func(c *cli.Context) error {
			idle, err := config.ParseIdleExit(c.String("idle-exit"))
			if err != nil {
				return err
			}
			o, err := installOptions(c)
			if err != nil {
				return err
			}
			o.IdleExit, o.Use = idle, c.Bool("use")
			return install.Install(c.Context, o)
		},
	}
}

// installOptions are the paths install and uninstall share: the daemon's
// own resolution of them (config.Resolve), and this hutch binary.
func installOptions(c *cli.Context) (install.Options, error) {
	cfg, err := config.Resolve(config.Flags{})
	if err != nil {
		return install.Options{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return install.Options{}, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return install.Options{}, fmt.Errorf("the hutch binary: %w", err)
	}
	return install.Options{
		Binary:     exe,
		Socket:     cfg.Socket,
		RuntimeDir: os.Getenv("XDG_RUNTIME_DIR"),
		DataRoot:   cfg.DataRoot,
		StateDir:   cfg.StateDir,
		System:     config.RealRoot(),
		Out:        c.App.Writer,
	}, nil
}
