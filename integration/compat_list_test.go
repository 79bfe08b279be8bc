//go:build integration

package integration

import (
	"context"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// GET /containers/json carries each container's health (API 1.52): the
// check's status and failing streak, "none" without a check; earlier
// versions have no such field.
func TestListHealthSummary(t *testing.T) {
	d, ref := pulled(t)
	must(t, d, "run", "-d", "--name", "hs", "-w", "/foo", "--health-cmd", `test "$PWD" = /foo`, "--health-interval", "100ms", ref, "sleep", "300")
	must(t, d, "run", "-d", "--name", "nohc", ref, "sleep", "300")
	ctx := context.Background()
	list := func(version string) map[string]*containertypes.HealthSummary {
		t.Helper()
		c, err := client.New(client.WithHost(d.Host()), client.WithAPIVersion(version))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res, err := c.ContainerList(ctx, client.ContainerListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*containertypes.HealthSummary{}
		for _, s := range res.Items {
			out[s.Names[0]] = s.Health
		}
		return out
	}
	deadline := time.Now().Add(time.Minute)
	for {
		h := list("1.52")["/hs"]
		if h != nil && h.Status == containertypes.Healthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hs never listed healthy: %+v (inspect: %s)", h, must(t, d, "inspect", "-f", "{{json .State.Health}}", "hs"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if h := list("1.52")["/nohc"]; h == nil || h.Status != containertypes.NoHealthcheck {
		t.Errorf("a container without a check lists %+v", h)
	}
	for name, h := range list("1.51") {
		if h != nil {
			t.Errorf("API 1.51 lists health %+v for %s", h, name)
		}
	}
}
