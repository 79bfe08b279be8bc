package main

import (
	"fmt"
	"runtime"

	"github.com/hutch-engine/hutch/version"
	"github.com/urfave/cli/v2"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print hutch's version",
		Action: func(c *cli.Context) error {
			fmt.Fprintf(c.App.Writer, "hutch %s (commit %s, %s, %s/%s)\n",
				version.Version, version.GitCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
