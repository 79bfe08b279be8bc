package install

import (
	"fmt"
	"strings"
	"time"
)

// Unit names.
const (
	SocketUnit  = "hutch.socket"
	ServiceUnit = "hutch.service"
)

// unitOptions are what the unit files say.
type unitOptions struct {
	// Binary is the hutch binary ExecStart runs.
	Binary string
	// Listen is ListenStream: "%t/hutch.sock" for a user, the real
	// root's socket path for the system.
	Listen string
	// IdleExit is --idle-exit (0: the daemon stays up).
	IdleExit time.Duration
}

// units returns the unit files by name. The socket is systemd's: it
// exists from login (or boot) on, the first connection starts the
// daemon, and a daemon that exited when idle is started again by the
// next one. KillMode=process, as Docker's unit has: SIGTERM reaches the
// daemon alone, which with live restore (the default) leaves its
// containers and the keeper of their namespaces running for the next
// start, and without it stops them before it exits.
func units(o unitOptions) map[string]string {
	wanted := "sockets.target"
	exec := []string{systemdQuote(o.Binary), "daemon"}
	if o.IdleExit > 0 {
		exec = append(exec, "--idle-exit", o.IdleExit.String())
	}
	socket := fmt.Sprintf(`# Written by hutch install; hutch uninstall removes it.
[Unit]
Description=hutch API socket (the Docker Engine API)
Documentation=man:systemd.socket(5)

[Socket]
ListenStream=%s
SocketMode=0600
DirectoryMode=0700
RemoveOnStop=yes

[Install]
WantedBy=%s
`, o.Listen, wanted)
	service := fmt.Sprintf(`# Written by hutch install; hutch uninstall removes it.
[Unit]
Description=hutch, a container engine serving the Docker Engine API
Requires=%s
After=%s

[Service]
Type=simple
ExecStart=%s
Restart=on-failure
RestartSec=2s
KillMode=process
TimeoutStopSec=2min
`, SocketUnit, SocketUnit, strings.Join(exec, " "))
	return map[string]string{SocketUnit: socket, ServiceUnit: service}
}

// systemdQuote quotes a path for ExecStart when it holds a space, a quote
// or a backslash, and doubles the % that systemd would expand.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
