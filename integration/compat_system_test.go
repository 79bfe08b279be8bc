//go:build integration

package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// /info and /version as Docker Engine 29 answers them, read through the
// Go SDK and the docker CLI (moby's integration/system TestInfoAPI and
// TestVersion).

func TestCompatSystemInfoVersion(t *testing.T) {
	d := startDaemon(t)
	c := d.Client(t)
	ctx := context.Background()

	// SystemTime is the daemon's clock, RFC 3339 with nanoseconds.
	before := time.Now()
	info, err := c.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	st, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime)
	if err != nil {
		t.Fatalf("SystemTime %q: %v", info.Info.SystemTime, err)
	}
	if st.Before(before) || st.After(after) {
		t.Errorf("SystemTime %s is not the time of the request (%s..%s)", st, before, after)
	}

	v, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Components) == 0 || v.Components[0].Name != "Engine" {
		t.Fatalf("components = %+v", v.Components)
	}
	details := v.Components[0].Details
	for _, k := range []string{"ApiVersion", "MinAPIVersion", "GitCommit", "GoVersion", "Os", "Arch", "KernelVersion", "BuildTime", "Experimental"} {
		if _, ok := details[k]; !ok {
			t.Errorf("Engine details lack %s: %v", k, details)
		}
	}
	experimental, err := strconv.ParseBool(details["Experimental"])
	if err != nil || experimental != info.Info.ExperimentalBuild {
		t.Errorf("Experimental %q (%v), /info ExperimentalBuild %v", details["Experimental"], err, info.Info.ExperimentalBuild)
	}
	if details["ApiVersion"] != v.APIVersion || details["MinAPIVersion"] != v.MinAPIVersion || details["Os"] != info.Info.OSType {
		t.Errorf("details %v, version %+v", details, v)
	}

	// The docker CLI shows the engine's experimental state from them.
	out := must(t, d, "version", "--format", "{{.Server.Experimental}} {{range .Server.Components}}{{.Name}}={{index .Details \"Experimental\"}} {{end}}")
	if !strings.HasPrefix(out, "false Engine=false") {
		t.Errorf("docker version = %q", out)
	}
}
