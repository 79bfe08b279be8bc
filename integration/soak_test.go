//go:build integration

package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

func engineRSSKiB(t *testing.T, d *daemon) int {
	t.Helper()
	for _, line := range strings.Split(readProc(t, enginePID(t, d), "status"), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// goroutines is the daemon's goroutine count, asked on a connection of
// its own that is closed after: an idle keep-alive connection holds a
// goroutine of the server's, which repeated asking would pile up.
func goroutines(t *testing.T, d *daemon) int {
	t.Helper()
	c, err := client.New(client.WithHost(d.Host()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Info.NGoroutines
}

// settledGoroutines returns the daemon's goroutine count once it is back
// within 3 of base, or after 15 s: handlers of dropped clients end a
// moment after the clients.
func settledGoroutines(t *testing.T, d *daemon, base int) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	n := goroutines(t, d)
	for n > base+3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n = goroutines(t, d)
	}
	return n
}

// Clients that hang up during logs -f and attach leak no goroutines and
// leave no container stuck.
func TestClientDisconnectsLeakNothing(t *testing.T) {
	d, ref := pulled(t)
	id, err := d.Docker(t, "run", "-d", ref, "sh", "-c", "while true; do echo tick; sleep 0.05; done")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	time.Sleep(200 * time.Millisecond)
	base := goroutines(t, d)
	for i := 0; i < 10; i++ {
		for _, args := range [][]string{{"logs", "-f", id}, {"attach", "--no-stdin", id}} {
			cmd := exec.Command(dockerCLI(t), args...)
			cmd.Env = append(cmd.Environ(), "DOCKER_HOST="+d.Host(), "DOCKER_CONFIG="+t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	if n := settledGoroutines(t, d, base); n > base+3 {
		t.Errorf("goroutines %d after 20 dropped clients, %d before", n, base)
	}
	if out, err := d.Docker(t, "rm", "-f", id); err != nil {
		t.Errorf("rm -f after dropped clients: %v %s", err, out)
	}
}

// 1 000 sequential runs keep the daemon's memory flat.
func TestSequentialRunsMemoryFlat(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	var warm int
	for i := 1; i <= 1000; i++ {
		if err := runOne(ctx, c, ref, fmt.Sprintf("seq-%d", i)); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, tail(d.Log(), 20))
		}
		if i == 100 {
			warm = engineRSSKiB(t, d)
		}
	}
	end := engineRSSKiB(t, d)
	t.Logf("engine RSS after 100 runs %d KiB, after 1000 runs %d KiB", warm, end)
	if end > warm+warm/2+4096 {
		t.Errorf("engine RSS grew from %d KiB (100 runs) to %d KiB (1000 runs)", warm, end)
	}
}

// A container that writes 100 MB of logs fast does not slow the API down
// to a stop or grow the daemon's memory: the shim writes the log.
func TestFastLogsDoNotBurdenTheDaemon(t *testing.T) {
	d, ref := pulled(t)
	before := engineRSSKiB(t, d)
	id, err := d.Docker(t, "run", "-d", ref, "sh", "-c", "yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -c 100000000")
	if err != nil {
		t.Fatal(err, id)
	}
	id = strings.TrimSpace(id)
	// The API keeps answering while the log grows.
	pings := 0
	for {
		out, err := d.Docker(t, "inspect", "--format", "{{.State.Running}}", id)
		if err != nil {
			t.Fatalf("inspect while logging: %v %s", err, out)
		}
		pings++
		if strings.TrimSpace(out) == "false" {
			break
		}
	}
	if out, err := d.Docker(t, "inspect", "--format", "{{.State.ExitCode}}", id); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("logging container: %v %s", err, out)
	}
	out, err := d.Docker(t, "logs", "--tail", "1", id)
	if err != nil || !strings.HasPrefix(out, "0123456789") {
		t.Errorf("logs --tail 1 of a 100 MB log: %v %.80q", err, out)
	}
	after := engineRSSKiB(t, d)
	t.Logf("engine RSS %d KiB before, %d KiB after 100 MB of logs; %d API calls answered meanwhile", before, after, pings)
	if after > before+32*1024 {
		t.Errorf("engine RSS grew by %d KiB while a container logged 100 MB", after-before)
	}
	d.Docker(t, "rm", "-f", id)
}
