package main

import (
	"github.com/hutch-engine/hutch/rootless/preflight"
	"github.com/urfave/cli/v2"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:  "check",
		Usage: "check what rootless operation needs, and print the fix for what is missing",
		Action: func(c *cli.Context) error {
			items := preflight.Run(c.Context, preflight.DefaultEnv())
			preflight.Write(c.App.Writer, items)
			return preflight.Fatal(items)
		},
	}
}
