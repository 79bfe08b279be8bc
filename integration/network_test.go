//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// httpdArgs runs busybox httpd serving body at / on port 80.
func httpdArgs(ref, body string) []string {
	return []string{ref, "sh", "-c", fmt.Sprintf("mkdir -p /www && echo %s > /www/index.html && exec httpd -f -p 80 -h /www", body)}
}

// busybox-static's wget crashes on -T: timeouts are timeout(1)'s, run
// from a shell that stays pid 1 (as pid 1, wget would ignore timeout's
// signal, and sh -c execs a lone command).

// getRetry GETs url until it answers (the server in the container may not
// listen yet) and returns the body.
func getRetry(t *testing.T, url string) string {
	t.Helper()
	return getRetryWith(t, &http.Client{Timeout: 5 * time.Second}, url)
}

// getRetryWith is getRetry through the client c.
func getRetryWith(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := c.Get(url)
		if err != nil {
			last = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("status %d, %v", resp.StatusCode, err)
			continue
		}
		return string(b)
	}
	t.Fatalf("GET %s: %v", url, last)
	return ""
}

// sandboxFiles lists the containers' network namespace files under the
// daemon's runtime state dir.
func sandboxFiles(t *testing.T, d *daemon) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(d.Runtime, "hutch", "netns"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// detachedLinks lists the interfaces of the detached network namespace,
// seen from inside rootlesskit's namespaces (which the user owns) with the
// host's nsenter and ip.
func detachedLinks(t *testing.T, d *daemon) []string {
	t.Helper()
	state := filepath.Join(d.Runtime, "hutch", "rootlesskit")
	pid, err := os.ReadFile(filepath.Join(state, "child_pid"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nsenter", "-t", strings.TrimSpace(string(pid)), "-U", "-m", "--preserve-credentials",
		"nsenter", "--net="+filepath.Join(state, "netns"), "ip", "-o", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the detached namespace's links: %v\n%s", err, out)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			names = append(names, name)
		}
	}
	return names
}

// vethsLeft returns the veths of the detached namespace that are still
// there after a second: the kernel deletes a container's veth pair in the
// background, once its namespace has died.
func vethsLeft(t *testing.T, d *daemon) []string {
	t.Helper()
	var v []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		if v = veths(detachedLinks(t, d)); len(v) == 0 || time.Now().After(deadline) {
			return v
		}
	}
}

func veths(links []string) []string {
	var out []string
	for _, l := range links {
		if strings.HasPrefix(l, "veth") {
			out = append(out, l)
		}
	}
	return out
}

// A container on the default bridge has its own namespace with an address
// of 172.17.0.0/16, a default route through the bridge, slirp4netns's MTU,
// and reaches the host's loopback as host.docker.internal and as
// host-gateway.
func TestNetworkDefaultBridge(t *testing.T) {
	d, ref := pulled(t)
	out := dockerOK(t, d, "run", "--rm", ref, "sh", "-c", "ip -4 -o addr show eth0; ip route; cat /sys/class/net/eth0/mtu; cat /etc/resolv.conf")
	for _, want := range []string{"inet 172.17.0.", "/16", "default via 172.17.0.1 dev eth0", "65520", "nameserver 10.0.2.3"} {
		if !strings.Contains(out, want) {
			t.Errorf("default bridge: no %q in\n%s", want, out)
		}
	}
	// IPv6 is off on the interfaces of an IPv4-only network, as Docker has
	// it (no link-local address, no multicast groups); loopback keeps ::1,
	// and a container may turn IPv6 back on.
	out = dockerOK(t, d, "run", "--rm", ref, "sh", "-c", "cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6; ip -6 -o addr")
	if !strings.HasPrefix(out, "1\n") || strings.Contains(out, "eth0") || !strings.Contains(out, "::1/128") {
		t.Errorf("IPv6 on the default bridge: want disable_ipv6 1 on eth0, no IPv6 address but lo's ::1, got\n%s", out)
	}
	out = dockerOK(t, d, "run", "--rm", "--sysctl", "net.ipv6.conf.all.disable_ipv6=0", ref, "ip", "-6", "-o", "addr", "show", "eth0")
	if !strings.Contains(out, "inet6 fe80::42:acff:fe11:") {
		t.Errorf("--sysctl net.ipv6.conf.all.disable_ipv6=0: no link-local address on eth0:\n%s", out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the host") })}
	go srv.Serve(l)
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port
	for _, name := range []string{"host.docker.internal", "x"} {
		out, err := d.Docker(t, "run", "--rm", "--add-host", "x:host-gateway", ref, "wget", "-qO-", fmt.Sprintf("http://%s:%d/", name, port))
		if err != nil || out != "from the host" {
			t.Errorf("container to the host's loopback as %s: %q, %v", name, out, err)
		}
	}
	if files := sandboxFiles(t, d); len(files) != 0 {
		t.Errorf("network namespaces left after --rm: %v", files)
	}
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left after --rm: %v", v)
	}
}

// Containers on a user network find each other by name, alias and
// name.network through the embedded DNS server; networks are isolated
// from each other, and an internal network reaches nothing outside.
func TestNetworkUserDNS(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "network", "create", "mynet")
	dockerOK(t, d, append([]string{"run", "-d", "--network", "mynet", "--name", "web", "--network-alias", "www"}, httpdArgs(ref, "named")...)...)
	fetch := func(args ...string) (string, error) {
		return d.Docker(t, append([]string{"run", "--rm"}, args...)...)
	}
	loop := func(url string) string {
		return fmt.Sprintf("for i in $(seq 100); do wget -qO- %s && exit 0; sleep 0.1; done; exit 1", url)
	}
	for _, name := range []string{"web", "www", "web.mynet", "WEB"} {
		out, err := fetch("--network", "mynet", ref, "sh", "-c", loop("http://"+name+"/"))
		if err != nil || out != "named\n" {
			t.Errorf("wget http://%s/ on mynet: %q, %v", name, out, err)
		}
	}
	insp := dockerOK(t, d, "inspect", "-f", "{{with .NetworkSettings.Networks.mynet}}{{.IPAddress}} {{.Gateway}} {{.Aliases}} {{.DNSNames}}{{end}}", "web")
	f := strings.Fields(insp)
	if len(f) < 3 || !strings.HasPrefix(f[0], "172.18.") || f[1] != "172.18.0.1" || !strings.Contains(insp, "[www]") || !strings.Contains(insp, "[web www ") {
		t.Errorf("inspect web on mynet: %q", insp)
	}
	webIP := f[0]
	if out, err := fetch("--network", "mynet", ref, "cat", "/etc/resolv.conf"); err != nil || out != "nameserver 172.18.0.1\noptions ndots:0\n" {
		t.Errorf("resolv.conf on mynet: %q, %v", out, err)
	}
	// The default bridge neither resolves the name nor reaches the address.
	if out, err := fetch(ref, "sh", "-c", "timeout 3 wget -qO- http://"+webIP+"/; exit $?"); err == nil {
		t.Errorf("the default bridge reached mynet's %s: %q", webIP, out)
	}
	// An internal network: names work, the host does not.
	dockerOK(t, d, "network", "create", "--internal", "inner")
	dockerOK(t, d, "network", "connect", "inner", "web")
	if out, err := fetch("--network", "inner", ref, "sh", "-c", loop("http://web/")); err != nil || out != "named\n" {
		t.Errorf("wget http://web/ on the internal network: %q, %v", out, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "leak") })}
	go srv.Serve(l)
	defer srv.Close()
	hostURL := fmt.Sprintf("http://10.0.2.2:%d/", l.Addr().(*net.TCPAddr).Port)
	if out, err := fetch("--network", "inner", ref, "sh", "-c", "timeout 3 wget -qO- "+hostURL+"; exit $?"); err == nil {
		t.Errorf("the internal network reached the host: %q", out)
	}
	if out, err := fetch("--network", "mynet", ref, "wget", "-qO-", hostURL); err != nil || out != "leak" {
		t.Errorf("mynet to the host: %q, %v", out, err)
	}
	dockerOK(t, d, "rm", "-f", "web")
	dockerOK(t, d, "network", "rm", "mynet", "inner")
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left: %v\n%s", v, d.Log())
	}
}

// --network host is the host's network, none has loopback only, and
// container:<id> shares another container's namespace.
func TestNetworkModes(t *testing.T) {
	d, ref := pulled(t)
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	var host []string
	for _, e := range ents {
		host = append(host, e.Name())
	}
	out := dockerOK(t, d, "run", "--rm", "--network", "host", ref, "ls", "/sys/class/net")
	if got := strings.Fields(out); !slices.Equal(got, host) {
		t.Errorf("--network host sees %v, the host has %v", got, host)
	}
	hn, _ := os.Hostname()
	if out := dockerOK(t, d, "run", "--rm", "--network", "host", ref, "hostname"); out != hn {
		t.Errorf("--network host hostname %q, want %q", out, hn)
	}
	if out := dockerOK(t, d, "run", "--rm", "--network", "none", ref, "ls", "/sys/class/net"); out != "lo" {
		t.Errorf("--network none: %q", out)
	}
	dockerOK(t, d, "run", "-d", "--name", "base", "--hostname", "basehost", ref, "sleep", "60")
	ip := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.bridge.IPAddress}}", "base")
	// The CLI's API version (below 1.52) still has the top-level fields.
	if legacy := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.IPAddress}} {{.NetworkSettings.Gateway}} {{.NetworkSettings.IPPrefixLen}}", "base"); legacy != ip+" 172.17.0.1 16" {
		t.Errorf("top-level NetworkSettings: %q, want %s 172.17.0.1 16", legacy, ip)
	}
	out = dockerOK(t, d, "run", "--rm", "--network", "container:base", ref, "sh", "-c", "ip -4 -o addr show eth0; hostname")
	if !strings.Contains(out, "inet "+ip+"/") || !strings.HasSuffix(out, "basehost") {
		t.Errorf("container:base sees %q; base has %s", out, ip)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--network", "container:base", "-p", "8080:80"}, "conflicting options: port publishing and the container type network mode"},
		{[]string{"--network", "container:base", "--expose", "80"}, "conflicting options: port exposing and the container type network mode"},
		{[]string{"--network", "container:base", "--add-host", "a:192.0.2.1"}, "conflicting options: custom host-to-IP mapping and the network mode"},
		{[]string{"--network", "container:base", "--link", "base:b"}, "conflicting options: container type network can't be used with links"},
		{[]string{"--network", "container:base", "-h", "other"}, "conflicting options: hostname and the network mode"},
		{[]string{"--uts", "host", "-h", "other"}, "conflicting options: hostname and the UTS mode"},
		{[]string{"--network", "container:nosuch"}, "No such container: nosuch"},
		{[]string{"--network", "nosuchnet"}, "network nosuchnet not found"},
		{[]string{"--network", "bridge", "--ip", "172.17.9.9"}, "user specified IP address is supported on user defined networks only"},
	} {
		out, err := d.Docker(t, append(append([]string{"run", "--rm"}, tc.args...), ref, "true")...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("run %v: %v %q, want %q", tc.args, err, out, tc.want)
		}
	}
	// A container that joined base's namespace outlives base: base's
	// interface is taken out of the namespace they shared, and its address
	// is free.
	dockerOK(t, d, "run", "-d", "--name", "joiner", "--network", "container:base", ref, "sleep", "60")
	dockerOK(t, d, "rm", "-f", "base")
	if out := dockerOK(t, d, "exec", "joiner", "ip", "-o", "link"); strings.Contains(out, "eth0") {
		t.Errorf("the joiner still has base's interface after base ended:\n%s", out)
	}
	dockerOK(t, d, "rm", "-f", "joiner")
	if v := vethsLeft(t, d); len(v) != 0 {
		t.Errorf("veths left: %v", v)
	}
}

// docker network ls/create/inspect/rm/connect/disconnect/prune.
func TestNetworkCLI(t *testing.T) {
	d, ref := pulled(t)
	ls := dockerOK(t, d, "network", "ls", "--format", "{{.Name}} {{.Driver}} {{.Scope}}")
	for _, want := range []string{"bridge bridge local", "host host local", "none null local"} {
		if !strings.Contains(ls, want) {
			t.Errorf("network ls: no %q in\n%s", want, ls)
		}
	}
	id := dockerOK(t, d, "network", "create", "--subnet", "10.99.0.0/24", "--gateway", "10.99.0.254", "--label", "team=a", "n1")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"network", "create", "n1"}, "network with name n1 already exists"},
		{[]string{"network", "create", "--subnet", "10.99.0.0/16", "n2"}, "Pool overlaps with other one on this address space"},
		{[]string{"network", "create", "--subnet", "10.98.0.1/24", "n3"}, "invalid subnet"},
		{[]string{"network", "create", "-d", "overlay", "n4"}, "not supported"},
		{[]string{"network", "rm", "bridge"}, "bridge is a pre-defined network and cannot be removed"},
		{[]string{"network", "inspect", "nosuch"}, "network nosuch not found"},
	} {
		if out, err := d.Docker(t, tc.args...); err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("docker %v: %v %q, want %q", tc.args, err, out, tc.want)
		}
	}
	if got := dockerOK(t, d, "network", "inspect", "-f", "{{.Id}} {{range .IPAM.Config}}{{.Subnet}} {{.Gateway}}{{end}} {{.Labels.team}} {{.Driver}}", "n1"); got != id+" 10.99.0.0/24 10.99.0.254 a bridge" {
		t.Errorf("network inspect n1: %q", got)
	}
	if got := dockerOK(t, d, "network", "ls", "-q", "--no-trunc", "--filter", "label=team=a"); got != id {
		t.Errorf("network ls --filter label: %q", got)
	}
	if got := dockerOK(t, d, "network", "ls", "--format", "{{.Name}}", "--filter", "type=custom"); got != "n1" {
		t.Errorf("network ls --filter type=custom: %q", got)
	}

	// A running container gets its new interface at once.
	dockerOK(t, d, "run", "-d", "--name", "c1", ref, "sh", "-c", "until ip -4 -o addr show eth1 2>/dev/null | grep -q inet; do sleep 0.1; done; ip -4 -o addr show eth1; sleep 60")
	dockerOK(t, d, "network", "connect", "--alias", "one", "n1", "c1")
	var logs string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(logs, "inet"); time.Sleep(100 * time.Millisecond) {
		logs = dockerOK(t, d, "logs", "c1")
	}
	if !strings.Contains(logs, "eth1") || !strings.Contains(logs, "inet 10.99.0.") {
		t.Errorf("hot-plugged interface: %q", logs)
	}
	if got := dockerOK(t, d, "inspect", "-f", "{{with .NetworkSettings.Networks.n1}}{{.IPAddress}} {{.Aliases}}{{end}}", "c1"); !strings.HasPrefix(got, "10.99.0.") || !strings.Contains(got, "[one]") {
		t.Errorf("inspect c1 on n1: %q", got)
	}
	if got := dockerOK(t, d, "network", "inspect", "-f", "{{range .Containers}}{{.Name}} {{.IPv4Address}}{{end}}", "n1"); !strings.HasPrefix(got, "c1 10.99.0.") || !strings.HasSuffix(got, "/24") {
		t.Errorf("network inspect n1 containers: %q", got)
	}
	if out, err := d.Docker(t, "network", "rm", "n1"); err == nil || !strings.Contains(out, "has active endpoints") {
		t.Errorf("network rm with a container: %v %q", err, out)
	}
	dockerOK(t, d, "network", "disconnect", "n1", "c1")
	if got := dockerOK(t, d, "inspect", "-f", "{{len .NetworkSettings.Networks}} {{range $k, $v := .NetworkSettings.Networks}}{{$k}}{{end}}", "c1"); got != "1 bridge" {
		t.Errorf("networks of c1 after disconnect: %q", got)
	}
	// A stopped container is connected at its next start, with --ip.
	dockerOK(t, d, "create", "--name", "c2", ref, "ip", "-4", "-o", "addr")
	dockerOK(t, d, "network", "connect", "--ip", "10.99.0.77", "n1", "c2")
	if out := dockerOK(t, d, "start", "-a", "c2"); !strings.Contains(out, "inet 10.99.0.77/24") || !strings.Contains(out, "inet 172.17.0.") {
		t.Errorf("c2 connected while stopped: %q", out)
	}
	dockerOK(t, d, "rm", "-f", "c1", "c2")
	dockerOK(t, d, "network", "rm", "n1")

	dockerOK(t, d, "network", "create", "p1")
	dockerOK(t, d, "network", "create", "--label", "keep=1", "p2")
	out := dockerOK(t, d, "network", "prune", "-f", "--filter", "label!=keep")
	if !strings.Contains(out, "p1") || strings.Contains(out, "p2") {
		t.Errorf("network prune: %q", out)
	}
	if got := dockerOK(t, d, "network", "ls", "--format", "{{.Name}}"); got != "bridge\nhost\nnone\np2" {
		t.Errorf("networks after prune: %q", got)
	}
}

// After a crash of every hutch process (shims and containers too), the
// next daemon removes the namespaces left under the state dir, the records
// lose their addresses, and the containers start again with their ports.
func TestNetworkCleanupAfterCrash(t *testing.T) {
	d, ref := pulled(t)
	port := freeLoopbackPort(t)
	dockerOK(t, d, append([]string{"run", "-d", "--name", "keep", "-p", fmt.Sprintf("127.0.0.1:%d:80", port)}, httpdArgs(ref, "again")...)...)
	dockerOK(t, d, "network", "create", "mynet")
	dockerOK(t, d, "run", "-d", "--network", "mynet", "--name", "other", ref, "sleep", "300")
	if files := sandboxFiles(t, d); len(files) != 2 {
		t.Fatalf("network namespaces of two containers: %v", files)
	}
	all := append([]int{d.cmd.Process.Pid}, descendants(t, d.cmd.Process.Pid)...)
	for _, p := range all {
		syscall.Kill(p, syscall.SIGKILL)
	}
	<-d.done
	waitGone(t, all)

	d2 := startDaemonEnv(t, d.env, d.Socket)
	d2.Runtime, d2.Data = d.Runtime, d.Data
	if files := sandboxFiles(t, d2); len(files) != 0 {
		t.Errorf("network namespaces left after the restart: %v", files)
	}
	if fw := rootlesskitPorts(t, d2); len(fw) != 0 {
		t.Errorf("forwards after the restart: %v", fw)
	}
	if v := vethsLeft(t, d2); len(v) != 0 {
		t.Errorf("veths after the restart: %v", v)
	}
	if got := dockerOK(t, d2, "inspect", "-f", "{{.State.Running}} {{.NetworkSettings.Networks.bridge.IPAddress}}|{{.NetworkSettings.SandboxKey}}", "keep"); got != "false invalid IP|" && got != "false |" {
		t.Errorf("keep after the crash: %q", got)
	}
	dockerOK(t, d2, "start", "keep", "other")
	if body := getRetry(t, fmt.Sprintf("http://127.0.0.1:%d/", port)); body != "again\n" {
		t.Errorf("published port after the restart: %q", body)
	}
	dockerOK(t, d2, "rm", "-f", "keep", "other")
	if files := sandboxFiles(t, d2); len(files) != 0 {
		t.Errorf("network namespaces left after rm -f: %v", files)
	}
}

// The Go SDK (the API's newest version, typed addresses) creates a network
// with a subnet, puts a container on it with an alias and a fixed address,
// and reads everything back.
func TestNetworkSDK(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	created, err := c.NetworkCreate(ctx, "sdknet", client.NetworkCreateOptions{
		IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: netip.MustParsePrefix("10.77.0.0/24"), IPRange: netip.MustParsePrefix("10.77.0.128/25")}}},
		Labels: map[string]string{"sdk": "yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"sleep", "60"}},
		HostConfig: &containertypes.HostConfig{NetworkMode: "sdknet"},
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			"sdknet": {Aliases: []string{"svc"}, IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: netip.MustParseAddr("10.77.0.9")}},
		}},
		Name: "sdkc",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, ctr.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	insp, err := c.ContainerInspect(ctx, ctr.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep := insp.Container.NetworkSettings.Networks["sdknet"]
	if ep == nil || ep.IPAddress.String() != "10.77.0.9" || ep.Gateway.String() != "10.77.0.1" || ep.NetworkID != created.ID ||
		!slices.Equal(ep.Aliases, []string{"svc"}) || !slices.Contains(ep.DNSNames, "sdkc") || ep.MacAddress.String() != "02:42:0a:4d:00:09" {
		t.Errorf("endpoint %+v", ep)
	}
	if insp.Container.NetworkSettings.SandboxKey == "" {
		t.Error("no SandboxKey")
	}
	n, err := c.NetworkInspect(ctx, "sdknet", client.NetworkInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := n.Network.Containers[ctr.ID]; !ok || r.IPv4Address.String() != "10.77.0.9/24" || r.Name != "sdkc" {
		t.Errorf("network containers %+v", n.Network.Containers)
	}
	if cfg := n.Network.IPAM.Config; len(cfg) != 1 || cfg[0].IPRange.String() != "10.77.0.128/25" {
		t.Errorf("IPAM %+v", n.Network.IPAM)
	}
	list, err := c.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", "sdk=yes")})
	if err != nil || len(list.Items) != 1 || list.Items[0].ID != created.ID {
		t.Errorf("list by label: %+v %v", list, err)
	}
	// A second container takes its address from the range.
	other, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &containertypes.Config{Image: ref, Cmd: []string{"sleep", "60"}},
		HostConfig: &containertypes.HostConfig{NetworkMode: "sdknet"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ContainerStart(ctx, other.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	oi, _ := c.ContainerInspect(ctx, other.ID, client.ContainerInspectOptions{})
	if ip := oi.Container.NetworkSettings.Networks["sdknet"].IPAddress; !netip.MustParsePrefix("10.77.0.128/25").Contains(ip) {
		t.Errorf("address outside the ip-range: %s", ip)
	}
	if _, err := c.NetworkRemove(ctx, "sdknet", client.NetworkRemoveOptions{}); err == nil || !strings.Contains(err.Error(), "has active endpoints") {
		t.Errorf("removing a network in use: %v", err)
	}
	for _, id := range []string{ctr.ID, other.ID} {
		if _, err := c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.NetworkRemove(ctx, "sdknet", client.NetworkRemoveOptions{}); err != nil {
		t.Errorf("removing the network: %v", err)
	}
}
