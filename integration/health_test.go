//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Health checks: docker run --health-*, an image's HEALTHCHECK, the
// states docker ps and inspect show, the filter and the events.
func TestHealthcheck(t *testing.T) {
	d, ref := pulled(t)
	since := fmt.Sprint(time.Now().Add(-time.Second).Unix())
	status := func(name string) string {
		return must(t, d, "inspect", "--format", "{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}", name)
	}
	// No probe yet (an hour's interval): starting.
	must(t, d, "run", "-d", "--name", "slow", "--health-cmd", "true", "--health-interval", "1h", ref, "sleep", "60")
	if st := status("slow"); st != "starting" {
		t.Errorf("health before the first probe = %q", st)
	}
	if ps := must(t, d, "ps", "--filter", "name=slow", "--format", "{{.Status}}"); !strings.HasSuffix(ps, "(health: starting)") {
		t.Errorf("docker ps status = %q", ps)
	}

	// Failing, then passing.
	id := must(t, d, "run", "-d", "--name", "hc", "--health-cmd", "echo probing; test -f /tmp/ok", "--health-interval", "100ms", "--health-retries", "2", ref, "sleep", "60")
	waitFor(t, func() bool { return status("hc") == "unhealthy" })
	var h struct {
		Status        string
		FailingStreak int
		Log           []struct {
			ExitCode int
			Output   string
		}
	}
	if err := json.Unmarshal([]byte(must(t, d, "inspect", "--format", "{{json .State.Health}}", "hc")), &h); err != nil {
		t.Fatal(err)
	}
	if h.FailingStreak < 2 || len(h.Log) == 0 || h.Log[0].ExitCode != 1 || h.Log[0].Output != "probing\n" {
		t.Errorf("unhealthy health = %+v", h)
	}
	if ps := must(t, d, "ps", "--filter", "name=hc", "--format", "{{.Status}}"); !strings.HasSuffix(ps, "(unhealthy)") {
		t.Errorf("docker ps status = %q", ps)
	}
	must(t, d, "exec", "hc", "touch", "/tmp/ok")
	waitFor(t, func() bool { return status("hc") == "healthy" })
	if got := must(t, d, "ps", "-q", "--no-trunc", "--filter", "health=healthy"); got != id {
		t.Errorf("ps --filter health=healthy = %q, want %s", got, id)
	}
	if got := lines(must(t, d, "ps", "-q", "--filter", "health=starting")); len(got) != 1 {
		t.Errorf("ps --filter health=starting = %q", got)
	}
	waitFor(t, func() bool {
		return must(t, d, "inspect", "--format", "{{len .State.Health.Log}}", "hc") == "5"
	})
	out := must(t, d, "events", "--since", since, "--until", fmt.Sprint(time.Now().Add(time.Second).Unix()), "--filter", "container=hc", "--filter", "event=health_status", "--format", "{{.Action}}")
	if out != "health_status: unhealthy\nhealth_status: healthy" {
		t.Errorf("health events = %q", out)
	}
	must(t, d, "rm", "-f", "hc", "slow")

	// A probe past its timeout fails and is killed.
	must(t, d, "run", "-d", "--name", "slowprobe", "--health-cmd", "sleep 30", "--health-timeout", "200ms", "--health-interval", "100ms", "--health-retries", "1", ref, "sleep", "60")
	waitFor(t, func() bool { return status("slowprobe") == "unhealthy" })
	if out := must(t, d, "inspect", "--format", "{{(index .State.Health.Log 0).Output}} {{(index .State.Health.Log 0).ExitCode}}", "slowprobe"); out != "Health check exceeded timeout (200ms) -1" {
		t.Errorf("timed-out probe: %q", out)
	}
	// Probes keep coming, one every 300 ms (100 ms apart, killed at
	// 200 ms): in 2 s, without the kill, six would be sleeping.
	time.Sleep(2 * time.Second)
	if top := must(t, d, "top", "slowprobe"); strings.Count(top, "sleep 30") > 2 {
		t.Errorf("timed-out probes pile up:\n%s", top)
	}
	must(t, d, "rm", "-f", "slowprobe")

	// An image's HEALTHCHECK, and HEALTHCHECK NONE.
	dir := buildDir(t, map[string]string{"Dockerfile": "FROM " + ref + "\nHEALTHCHECK --interval=100ms CMD true\n"})
	must(t, d, "build", "-t", "checked", dir)
	must(t, d, "run", "-d", "--name", "img", "checked", "sleep", "60")
	waitFor(t, func() bool { return status("img") == "healthy" })
	dir = buildDir(t, map[string]string{"Dockerfile": "FROM checked\nHEALTHCHECK NONE\n"})
	must(t, d, "build", "-t", "unchecked", dir)
	must(t, d, "run", "-d", "--name", "none", "unchecked", "sleep", "60")
	if st := status("none"); st != "none" {
		t.Errorf("health with HEALTHCHECK NONE = %q", st)
	}
	if got := must(t, d, "ps", "--filter", "health=none", "--format", "{{.Names}}"); got != "none" {
		t.Errorf("ps --filter health=none = %q", got)
	}
	must(t, d, "rm", "-f", "img", "none")

	// Docker's limits.
	body := `{"Image":"` + ref + `","Cmd":["true"],"Healthcheck":{"Test":["CMD","true"],"Interval":1000}}`
	if code, resp := rawDo(t, d, "POST", "/containers/create", map[string]string{"Content-Type": "application/json"}, strings.NewReader(body)); code != 400 || !strings.Contains(resp, "Interval in Healthcheck cannot be less than 1ms") {
		t.Errorf("create with a 1µs interval = %d %s", code, resp)
	}
	if ps := must(t, d, "ps", "-aq"); ps != "" {
		t.Errorf("containers left: %q", ps)
	}
}
