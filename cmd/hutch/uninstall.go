package main

import (
	"github.com/hutch-engine/hutch/internal/install"
	"github.com/urfave/cli/v2"
)

func uninstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "uninstall",
		Usage: "stop and remove what hutch install set up (the units and the docker context); data stays unless --purge",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "purge", Usage: "remove the data root (images, containers, volumes) and the state dir too"},
		},
		Action: func(c *cli.Context) error {
			o, err := installOptions(c)
			if err != nil {
				return err
			}
			o.Purge = c.Bool("purge")
			return install.Uninstall(c.Context, o)
		},
	}
}
