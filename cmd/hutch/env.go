package main

import (
	"fmt"

	"github.com/hutch-engine/hutch/config"
	"github.com/urfave/cli/v2"
)

func envCommand() *cli.Command {
	return &cli.Command{
		Name:  "env",
		Usage: "print the shell line that points docker and the SDKs at hutch (eval \"$(hutch env)\")",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "host", Aliases: []string{"H"}, Usage: "socket the daemon serves, if not the default"},
		},
		Action: func(c *cli.Context) error {
			var hosts []string
			if h := c.String("host"); h != "" {
				hosts = []string{h}
			}
			cfg, err := config.Resolve(config.Flags{Hosts: hosts})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "export DOCKER_HOST=unix://%s\n", cfg.Socket)
			return nil
		},
	}
}
