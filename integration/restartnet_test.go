//go:build integration

package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// After a kill -9 of the daemon, a container adopted again has lost its
// network: the rootless daemon's namespaces are new at each start, and the
// container's interfaces went with the old ones. It must not stay
// "running" at addresses nothing reaches (compose up -d would leave it so):
// the restart stops it, as Docker without live-restore stops every
// container it finds alive, and a start brings it back on its network, by name
// and on its published port.
func TestRestartEndsNetworklessContainers(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "keepnet")
	addr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "web", "--network", "keepnet", "--stop-timeout", "1", "-p", addr+":80", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	get := func() (string, error) {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/index.html")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)), err
	}
	if body, err := get(); body != "up" {
		t.Fatalf("published port before the restart: %q, %v", body, err)
	}

	killDaemons(t, d)

	d2 := startDaemonEnv(t, d.env, d.Socket)
	// Stopped before the API answers: its stop signal, then SIGKILL (httpd
	// as pid 1 ignores SIGTERM) after its stop timeout.
	if st := dockerOK(t, d2, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", "web"); st != "exited 137" {
		t.Errorf("a container whose network went with the daemon is %q after the restart, want exited 137", st)
	}
	dockerOK(t, d2, "start", "web")
	out, err := d2.Docker(t, "run", "--rm", "--network", "keepnet", ref, "wget", "-q", "-O", "-", "http://web/index.html")
	if strings.TrimSpace(out) != "up" {
		t.Errorf("web by name after its start: %q, %v\n%s", out, err, d2.Log())
	}
	if body, err := get(); body != "up" {
		t.Errorf("published port after the start: %q, %v", body, err)
	}
	dockerOK(t, d2, "rm", "-f", "web")
	dockerOK(t, d2, "network", "rm", "keepnet")
}
