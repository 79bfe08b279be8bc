//go:build integration

package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Without live restore, after a kill -9 of the daemon, a container adopted
// again has lost its network: the rootless daemon's namespaces are new at
// each start, and the container's interfaces went with the old ones
// (TestLiveRestoreKill9 keeps them). It must not stay
// "running" at addresses nothing reaches (compose up -d would leave it so):
// the restart stops it, as Docker without live-restore stops every
// container it finds alive, and a start brings it back on its network, by name
// and on its published port.
func TestRestartEndsNetworklessContainers(t *testing.T) {
	d, ref := pulled(t, "--live-restore=false")
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

	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore=false")
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

// Without live restore, after a kill -9 of the daemon: a --network host container is in the
// host's namespace, where the engine lives, not in the daemon's own: it
// outlives the daemon with its network and stays adopted, reachable and
// controllable. A --network container:<web> container shares web's
// namespace, whose interfaces went with the old daemon: it is stopped
// with web (Docker without live-restore stops both), and starts again in
// web's new one. One joined to a --network none container loses nothing
// and stays, with its owner.
func TestRestartHostAndJoinedContainers(t *testing.T) {
	d, ref := pulled(t, "--live-restore=false")
	dockerOK(t, d, "network", "create", "keepnet")
	dockerOK(t, d, "run", "-d", "--name", "web", "--network", "keepnet", "--stop-timeout", "1", ref,
		"sh", "-c", "mkdir -p /www && echo up > /www/index.html && exec httpd -f -p 80 -h /www")
	dockerOK(t, d, "run", "-d", "--name", "side", "--network", "container:web", "--stop-timeout", "1", ref, "sleep", "300")
	hostAddr := freeLoopbackAddr(t)
	dockerOK(t, d, "run", "-d", "--name", "hostweb", "--network", "host", ref,
		"sh", "-c", "mkdir -p /www && echo host > /www/index.html && exec httpd -f -p "+hostAddr+" -h /www")
	dockerOK(t, d, "run", "-d", "--name", "alone", "--network", "none", ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--name", "alone-side", "--network", "container:alone", ref, "sleep", "300")
	get := func(url string) (string, error) {
		c := http.Client{Timeout: 5 * time.Second}
		var err error
		for range 50 { // httpd may not listen yet
			var resp *http.Response
			if resp, err = c.Get(url); err == nil {
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return strings.TrimSpace(string(b)), err
			}
			time.Sleep(100 * time.Millisecond)
		}
		return "", err
	}
	if body, err := get("http://" + hostAddr + "/index.html"); body != "host" {
		t.Fatalf("the --network host server before the restart: %q, %v", body, err)
	}
	if out := dockerOK(t, d, "exec", "side", "wget", "-qO-", "http://127.0.0.1/index.html"); out != "up" {
		t.Fatalf("side reaches web's server on their loopback: %q", out)
	}

	killDaemons(t, d)
	d2 := startDaemonEnv(t, d.env, d.Socket, "--live-restore=false")

	state := func(name string) string {
		return dockerOK(t, d2, "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", name)
	}
	for name, want := range map[string]string{"web": "exited 137", "side": "exited 137", "hostweb": "running 0", "alone": "running 0", "alone-side": "running 0"} {
		if got := state(name); got != want {
			t.Errorf("%s after the restart: %q, want %q", name, got, want)
		}
	}
	if body, err := get("http://" + hostAddr + "/index.html"); body != "host" {
		t.Errorf("the --network host server after the restart: %q, %v", body, err)
	}
	if out, err := d2.Docker(t, "exec", "hostweb", "cat", "/www/index.html"); strings.TrimSpace(out) != "host" {
		t.Errorf("exec in the adopted --network host container: %q, %v", out, err)
	}
	// Started again, side is in web's new namespace.
	dockerOK(t, d2, "start", "web")
	dockerOK(t, d2, "start", "side")
	if out, err := d2.Docker(t, "exec", "side", "sh", "-c", "for i in $(seq 50); do wget -qO- http://127.0.0.1/index.html && exit 0; sleep 0.1; done; exit 1"); strings.TrimSpace(out) != "up" {
		t.Errorf("side to web's server after their start: %q, %v", out, err)
	}
	dockerOK(t, d2, "stop", "-t", "1", "hostweb")
	if got := state("hostweb"); !strings.HasPrefix(got, "exited ") {
		t.Errorf("the adopted --network host container after docker stop: %q", got)
	}
	dockerOK(t, d2, "rm", "-f", "side", "web", "hostweb", "alone-side", "alone")
	dockerOK(t, d2, "network", "rm", "keepnet")
}
