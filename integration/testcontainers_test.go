//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"
)

// lineCollector is a testcontainers log consumer that keeps every line.
type lineCollector struct {
	mu    sync.Mutex
	lines []string
}

func (c *lineCollector) Accept(l testcontainers.Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l.LogType+":"+strings.TrimRight(string(l.Content), "\n"))
}

func (c *lineCollector) has(line string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if l == line {
			return true
		}
	}
	return false
}

// TestTestcontainersGo runs what testcontainers-go users do against one
// daemon, through the library itself: DOCKER_HOST, Ryuk disabled (its image
// lives on Docker Hub), a busybox image pulled from a loopback registry.
// testcontainers-go caches the Docker host it found for the whole process,
// so this is the only test of the package that may use the library.
func TestTestcontainersGo(t *testing.T) {
	ref := busybox(t)
	d := startDaemon(t)
	home := t.TempDir()
	t.Setenv("HOME", home) // no ~/.testcontainers.properties of the user's
	t.Setenv("DOCKER_HOST", d.Host())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	if _, err := os.Stat("/.dockerenv"); err == nil {
		// testcontainers-go then takes the default bridge's gateway
		// for the host of published ports, as for a sibling of the
		// test's container under a rootful dockerd. hutch publishes
		// in the test's own network namespace, as rootless Docker does.
		t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		if t.Failed() {
			t.Logf("--- daemon log ---\n%s", d.Log())
		}
	}()

	t.Run("httpd", func(t *testing.T) { tcHTTPD(ctx, t, ref) })
	t.Run("network", func(t *testing.T) { tcNetwork(ctx, t, ref) })
	t.Run("mounts", func(t *testing.T) { tcMounts(ctx, t, ref) })
	t.Run("dockerfile", func(t *testing.T) { tcDockerfile(ctx, t, ref) })

	// What the tests started, their cleanups removed.
	for _, args := range [][]string{{"ps", "-aq"}, {"volume", "ls", "-q"}, {"network", "ls", "-q", "--filter", "type=custom"}} {
		if out, err := d.Docker(t, args...); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("docker %s after the cleanups: %v %q", strings.Join(args, " "), err, out)
		}
	}
	// The image built from a Dockerfile went with its container.
	if out, err := d.Docker(t, "images", "--format", "{{.Repository}}"); err != nil || strings.TrimSpace(out) != strings.Split(ref, ":latest")[0] {
		t.Errorf("images after the cleanups: %v %q", err, out)
	}
}

// quickStop ends the containers that ignore SIGTERM (a pid 1 without a
// handler, as httpd and sleep) at once when a test cleans up.
var quickStop = testcontainers.StopTimeout(0)

// tcHTTPD starts busybox httpd serving a file copied in before the start,
// waits for it every way users do, then reaches it through the mapped port.
func tcHTTPD(ctx context.Context, t *testing.T, ref string) {
	logs := &lineCollector{}
	c, err := testcontainers.Run(ctx, ref,
		testcontainers.WithCmd("sh", "-c", `echo "starting $GREETING"; echo oops >&2; exec httpd -f -v -p 8080 -h /www`),
		testcontainers.WithEnv(map[string]string{"GREETING": "hello"}),
		testcontainers.WithLabels(map[string]string{"hutch.test": "tc"}),
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader: strings.NewReader("served by hutch\n"), ContainerFilePath: "/www/index.html", FileMode: 0o644,
		}),
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithLogConsumers(logs),
		testcontainers.WithWaitStrategy(
			wait.ForLog("starting hello"),
			wait.ForExec([]string{"test", "-f", "/www/index.html"}),
			wait.ForListeningPort("8080/tcp"),
			wait.ForHTTP("/").WithPort("8080/tcp"),
		),
	)
	testcontainers.CleanupContainer(t, c, quickStop)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	endpoint, err := c.PortEndpoint(ctx, "8080/tcp", "http")
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, endpoint+"/index.html"); got != "served by hutch\n" {
		t.Errorf("GET %s = %q", endpoint, got)
	}
	host, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	port, err := c.MappedPort(ctx, "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("http://%s:%d", host, port.Num()); endpoint != want {
		t.Errorf("PortEndpoint = %q, Host and MappedPort make %q", endpoint, want)
	}

	insp, err := c.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if insp.Config.Labels["hutch.test"] != "tc" {
		t.Errorf("labels %v", insp.Config.Labels)
	}

	code, out, err := c.Exec(ctx, []string{"sh", "-c", "echo $GREETING; echo err >&2; exit 3"}, tcexec.Multiplexed())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out)
	if code != 3 || !strings.Contains(string(b), "hello") || !strings.Contains(string(b), "err") {
		t.Errorf("Exec = %d %q, want 3 with hello and err", code, b)
	}

	rc, err := c.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(b), "starting hello\n") || !strings.Contains(string(b), "oops\n") {
		t.Errorf("Logs = %q", b)
	}
	if !logs.has("STDOUT:starting hello") || !logs.has("STDERR:oops") {
		t.Errorf("log consumer got %q", logs.lines)
	}

	rc, err = c.CopyFileFromContainer(ctx, "/www/index.html")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(rc)
	rc.Close()
	if string(b) != "served by hutch\n" {
		t.Errorf("CopyFileFromContainer = %q", b)
	}
	if err := c.CopyToContainer(ctx, []byte("later\n"), "/www/later.html", 0o644); err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, endpoint+"/later.html"); got != "later\n" {
		t.Errorf("GET later.html = %q", got)
	}

	timeout := 2 * time.Second
	if err := c.Stop(ctx, &timeout); err != nil {
		t.Fatal(err)
	}
	st, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || st.Status != "exited" {
		t.Errorf("state after Stop: %+v", st)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	endpoint, err = c.PortEndpoint(ctx, "8080/tcp", "http")
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, endpoint+"/index.html"); got != "served by hutch\n" {
		t.Errorf("GET after restart = %q", got)
	}
	// httpd, pid 1, ignores SIGTERM: the stop ends with SIGKILL.
	if err := c.Terminate(ctx, testcontainers.StopTimeout(time.Second)); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if _, err := c.State(ctx); err == nil {
		t.Error("State answers after Terminate")
	}
}

// httpGet fetches url from the host, retrying while the port is not yet
// forwarded.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	var last error
	for range 50 {
		resp, err := http.Get(url)
		if err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			last = fmt.Errorf("status %d, %v", resp.StatusCode, err)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("GET %s: %v", url, last)
	return ""
}

// tcNetwork starts two containers on a network.New network: the client
// reaches the server by its alias.
func tcNetwork(ctx context.Context, t *testing.T, ref string) {
	nw, err := network.New(ctx)
	if err != nil {
		t.Fatalf("network.New: %v", err)
	}
	testcontainers.CleanupNetwork(t, nw)

	srv, err := testcontainers.Run(ctx, ref,
		testcontainers.WithCmd("sh", "-c", "mkdir /www && echo by-alias > /www/index.html && exec httpd -f -p 80 -h /www"),
		network.WithNetwork([]string{"web"}, nw),
		testcontainers.WithWaitStrategy(wait.ForExec([]string{"wget", "-qO-", "http://127.0.0.1/"})),
	)
	testcontainers.CleanupContainer(t, srv, quickStop)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	aliases, err := srv.NetworkAliases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(aliases[nw.Name], "web") {
		t.Errorf("NetworkAliases = %v, want web on %s", aliases, nw.Name)
	}

	cli, err := testcontainers.Run(ctx, ref,
		testcontainers.WithCmd("sleep", "60"),
		network.WithNetwork(nil, nw),
	)
	testcontainers.CleanupContainer(t, cli, quickStop)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	code, out, err := cli.Exec(ctx, []string{"wget", "-qO-", "http://web/"}, tcexec.Multiplexed())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out)
	if code != 0 || string(b) != "by-alias\n" {
		t.Errorf("wget http://web/ = %d %q", code, b)
	}
}

// tcMounts writes to a named volume and a tmpfs, and reads the volume back
// from a second container.
func tcMounts(ctx context.Context, t *testing.T, ref string) {
	vol := "tc-vol-" + strings.ReplaceAll(t.Name(), "/", "-")
	w, err := testcontainers.Run(ctx, ref,
		testcontainers.WithCmd("sh", "-c", "echo kept > /data/f && grep -q ' /scratch tmpfs ' /proc/mounts && echo tmpfs-ok"),
		testcontainers.WithMounts(testcontainers.VolumeMount(vol, "/data")),
		testcontainers.WithTmpfs(map[string]string{"/scratch": "rw,size=1m"}),
		testcontainers.WithWaitStrategy(wait.ForExit()),
	)
	testcontainers.CleanupContainer(t, w, quickStop, testcontainers.RemoveVolumes(vol))
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	st, err := w.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := w.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if st.ExitCode != 0 || !strings.Contains(string(b), "tmpfs-ok") {
		t.Errorf("writer exited %d with %q", st.ExitCode, b)
	}

	r, err := testcontainers.Run(ctx, ref,
		testcontainers.WithCmd("cat", "/data/f"),
		testcontainers.WithMounts(testcontainers.VolumeMount(vol, "/data")),
		testcontainers.WithWaitStrategy(wait.ForLog("kept")),
	)
	testcontainers.CleanupContainer(t, r, quickStop)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
}

// tcDockerfile builds an image from a context directory and runs it.
func tcDockerfile(ctx context.Context, t *testing.T, ref string) {
	dir := t.TempDir()
	df := fmt.Sprintf("FROM %s\nARG WHO\nCOPY msg.txt /msg.txt\nRUN echo \"built for $WHO\" >> /msg.txt\nCMD [\"cat\", \"/msg.txt\"]\n", ref)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "msg.txt"), []byte("from the context\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	who := "testcontainers"
	var buildLog strings.Builder
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			FromDockerfile: testcontainers.FromDockerfile{
				Context:        dir,
				BuildArgs:      map[string]*string{"WHO": &who},
				BuildLogWriter: &buildLog,
			},
			WaitingFor: wait.ForLog("built for testcontainers"),
		},
		Started: true,
	})
	testcontainers.CleanupContainer(t, c, quickStop)
	if err != nil {
		t.Fatalf("FromDockerfile: %v\n--- build log ---\n%s", err, buildLog.String())
	}
	rc, err := c.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "from the context\nbuilt for testcontainers\n" {
		t.Errorf("logs of the built image = %q", b)
	}
}
