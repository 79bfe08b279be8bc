package main

import (
	"github.com/hutch-engine/hutch/config"
	"github.com/hutch-engine/hutch/daemon"
	"github.com/urfave/cli/v2"
)

func daemonCommand() *cli.Command {
	return &cli.Command{
		Name:  "daemon",
		Usage: "run the engine in the foreground (logs to stderr; SIGTERM or SIGINT stop it)",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "host", Aliases: []string{"H"}, Usage: "where to serve: unix:///path (default $XDG_RUNTIME_DIR/hutch.sock) and, if asked, one tcp://host:port (needs TLS or --insecure-tcp)"},
			&cli.StringFlag{Name: "tlscert", Usage: "TLS certificate for a tcp:// host"},
			&cli.StringFlag{Name: "tlskey", Usage: "TLS key for a tcp:// host"},
			&cli.StringFlag{Name: "tlscacert", Usage: "CA that client certificates must be signed by (verifies clients)"},
			&cli.BoolFlag{Name: "insecure-tcp", Usage: "allow a tcp:// host without TLS: anyone who reaches it controls your containers"},
			&cli.StringFlag{Name: "data-root", Usage: "persistent data (default $XDG_DATA_HOME/hutch)"},
			&cli.StringFlag{Name: "config-file", Usage: "daemon.json (default $XDG_CONFIG_HOME/hutch/daemon.json)"},
			&cli.StringFlag{Name: "log-level", Aliases: []string{"l"}, Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "idmap", Value: "auto", Usage: "user namespace mapping: auto (subuid ranges when present) or single (only your uid)"},
			&cli.BoolFlag{Name: "live-restore", Value: true, Usage: "keep containers running while the engine is stopped, restarted or upgraded (default from daemon.json's live-restore, else on)"},
			&cli.StringFlag{Name: "network", Value: "auto", Usage: "container network: slirp4netns, none, or auto (slirp4netns where it can run, else none)"},
			&cli.StringFlag{Name: "idle-exit", Usage: "exit after this long (5m, 90s) with no container running and no client connected; hutch.socket starts it again (0: never, the default)"},
		},
		Action: func(c *cli.Context) error {
			var liveRestore *bool
			if c.IsSet("live-restore") {
				v := c.Bool("live-restore")
				liveRestore = &v
			}
			return daemon.Run(c.Context, config.Flags{
				LiveRestore: liveRestore,
				Hosts:       c.StringSlice("host"),
				TLSCert:     c.String("tlscert"),
				TLSKey:      c.String("tlskey"),
				TLSCACert:   c.String("tlscacert"),
				InsecureTCP: c.Bool("insecure-tcp"),
				DataRoot:    c.String("data-root"),
				ConfigFile:  c.String("config-file"),
				LogLevel:    c.String("log-level"),
				IDMap:       c.String("idmap"),
				Network:     c.String("network"),
				IdleExit:    c.String("idle-exit"),
			})
		},
	}
}
