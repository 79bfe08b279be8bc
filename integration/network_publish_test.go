//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// freeLoopbackPort returns a TCP port free on 127.0.0.1 right now.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rootlesskitPorts lists the forwards rootlesskit's port driver holds,
// from its API socket in the daemon's runtime dir.
func rootlesskitPorts(t *testing.T, d *daemon) []string {
	t.Helper()
	sock := filepath.Join(d.Runtime, "hutch", "rootlesskit", "api.sock")
	resp, err := unixHTTPClient(sock).Get("http://rootlesskit/v1/ports")
	if err != nil {
		t.Fatalf("rootlesskit API: %v", err)
	}
	defer resp.Body.Close()
	var ports []struct {
		ID   int `json:"id"`
		Spec struct {
			Proto      string `json:"proto"`
			ParentIP   string `json:"parentIP"`
			ParentPort int    `json:"parentPort"`
			ChildIP    string `json:"childIP"`
			ChildPort  int    `json:"childPort"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ports); err != nil {
		t.Fatalf("rootlesskit ports: %v", err)
	}
	var out []string
	for _, p := range ports {
		out = append(out, fmt.Sprintf("%s %s:%d->%s:%d", p.Spec.Proto, p.Spec.ParentIP, p.Spec.ParentPort, p.Spec.ChildIP, p.Spec.ChildPort))
	}
	return out
}

// Published ports: a host IP and port, udp, -P and port 0 (random host
// ports), shown by docker port, inspect and ps; all gone after rm -f.
func TestNetworkPublish(t *testing.T) {
	publish(t)
}

// Likewise with live restore, where hutch-keeper serves the port
// driver's child side.
func TestLiveRestorePublish(t *testing.T) {
	publish(t, "--live-restore")
}

func publish(t *testing.T, args ...string) {
	d, ref := pulled(t, args...)
	port, uport := freeLoopbackPort(t), freeLoopbackPort(t)
	dockerOK(t, d, append([]string{"run", "-d", "--name", "web", "-p", fmt.Sprintf("127.0.0.1:%d:80", port),
		"-p", fmt.Sprintf("127.0.0.1:%d:5353/udp", uport)}, httpdArgs(ref, "published")...)...)
	if body := getRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); body != "published\n" {
		t.Errorf("published port: %q", body)
	}
	out := dockerOK(t, d, "port", "web")
	for _, want := range []string{fmt.Sprintf("80/tcp -> 127.0.0.1:%d", port), fmt.Sprintf("5353/udp -> 127.0.0.1:%d", uport)} {
		if !strings.Contains(out, want) {
			t.Errorf("docker port: no %q in\n%s", want, out)
		}
	}
	var ports map[string][]struct{ HostIp, HostPort string }
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "-f", "{{json .NetworkSettings.Ports}}", "web")), &ports); err != nil {
		t.Fatal(err)
	}
	if b := ports["80/tcp"]; len(b) != 1 || b[0].HostIp != "127.0.0.1" || b[0].HostPort != fmt.Sprint(port) {
		t.Errorf("inspect ports: %+v", ports)
	}
	if ps := dockerOK(t, d, "ps", "--filter", "name=web", "--format", "{{.Ports}}"); !strings.Contains(ps, fmt.Sprintf("127.0.0.1:%d->80/tcp", port)) {
		t.Errorf("docker ps ports: %q", ps)
	}
	// A restart publishes the ports again (the old run's cleanup must not
	// take the new run's network away).
	dockerOK(t, d, "restart", "-t", "0", "web")
	if body := getRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); body != "published\n" {
		t.Errorf("published port after a restart: %q", body)
	}
	// rootlesskit's parent holds the udp port on the host.
	if c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", uport)); err == nil {
		c.Close()
		t.Errorf("udp port %d is not bound on the host", uport)
	}

	// -P publishes the exposed ports on random host ports, on all addresses.
	dockerOK(t, d, append([]string{"run", "-d", "--name", "all", "-P", "--expose", "80"}, httpdArgs(ref, "random")...)...)
	out = dockerOK(t, d, "port", "all", "80")
	var random int
	if _, err := fmt.Sscanf(strings.Split(out, "\n")[0], "0.0.0.0:%d", &random); err != nil || random == 0 {
		t.Fatalf("docker port all 80: %q (%v)", out, err)
	}
	if body := getRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", random)); body != "random\n" {
		t.Errorf("-P port: %q", body)
	}
	// Port 0 on one address.
	dockerOK(t, d, append([]string{"run", "-d", "--name", "zero", "-p", "127.0.0.1::80"}, httpdArgs(ref, "zero")...)...)
	out = dockerOK(t, d, "port", "zero", "80")
	if _, err := fmt.Sscanf(out, "127.0.0.1:%d", &random); err != nil || random == 0 {
		t.Fatalf("docker port zero 80: %q (%v)", out, err)
	}
	if body := getRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", random)); body != "zero\n" {
		t.Errorf("port 0: %q", body)
	}
	if fw := rootlesskitPorts(t, d); len(fw) != 4 {
		t.Errorf("rootlesskit forwards: %v, want 4", fw)
	}

	dockerOK(t, d, "rm", "-f", "web", "all", "zero")
	if fw := rootlesskitPorts(t, d); len(fw) != 0 {
		t.Errorf("forwards left after rm -f: %v", fw)
	}
	if files := sandboxFiles(t, d); len(files) != 0 {
		t.Errorf("network namespaces left after rm -f: %v", files)
	}
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left after rm -f: %v", v)
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		c.Close()
		t.Errorf("port %d still answers after rm -f", port)
	}
}

// A host port already taken fails the start with a clear error, and
// nothing of the start is left: no forward (not even the port that could
// be bound before), no namespace, no veth, the container not running.
func TestNetworkPortTaken(t *testing.T) {
	d, ref := pulled(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	taken := l.Addr().(*net.TCPAddr).Port
	free := freeLoopbackPort(t)
	out, err := d.Docker(t, "run", "-d", "--name", "clash", "-p", fmt.Sprintf("127.0.0.1:%d:70", free),
		"-p", fmt.Sprintf("127.0.0.1:%d:80", taken), ref, "sleep", "60")
	if err == nil || !strings.Contains(out, "address already in use") || !strings.Contains(out, fmt.Sprintf("127.0.0.1:%d", taken)) {
		t.Errorf("run with a taken port: %v\n%s", err, out)
	}
	if st := dockerOK(t, d, "ps", "-a", "--filter", "name=clash", "--format", "{{.State}}"); st != "created" {
		t.Errorf("container after the failed start: %q", st)
	}
	if fw := rootlesskitPorts(t, d); len(fw) != 0 {
		t.Errorf("forwards left by the failed start: %v", fw)
	}
	if files := sandboxFiles(t, d); len(files) != 0 {
		t.Errorf("network namespaces left by the failed start: %v", files)
	}
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left by the failed start: %v", v)
	}
	if ip := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.bridge.IPAddress}}", "clash"); ip != "" && ip != "invalid IP" {
		t.Errorf("address recorded after the failed start: %q", ip)
	}
	// Once the port is free, the same container starts.
	l.Close()
	dockerOK(t, d, "start", "clash")
	if fw := rootlesskitPorts(t, d); len(fw) != 2 {
		t.Errorf("forwards after the start: %v", fw)
	}
	dockerOK(t, d, "rm", "-f", "clash")
}
