//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/client"
)

// A legacy link names the linked container /parent/alias: docker ps lists
// that name and its filter finds it (moby's TestLinksContainerNames), and
// inspect shows the parent's links as /linked:/parent/alias (moby's
// TestLinksInspectLinksStarted, TestLinkShortDefinition). Without
// DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS=1 the daemon sets none of
// the links' environment variables, as Docker 29.
func TestLinkNamesAndInspect(t *testing.T) {
	d, ref := pulled(t)
	ctx := context.Background()
	dockerOK(t, d, "run", "-d", "--name", "first", ref, "sleep", "300")
	dockerOK(t, d, "run", "-d", "--name", "second", "--link", "first:first", "--link", "first:other", ref, "sleep", "300")

	list, err := d.Client(t).ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("name", "first")})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || !slices.Equal(list.Items[0].Names, []string{"/first", "/second/first", "/second/other"}) {
		var names [][]string
		for _, c := range list.Items {
			names = append(names, c.Names)
		}
		t.Errorf("name=first lists %v", names)
	}
	// The CLI shows the container's own name, and finds it by a link's.
	if out := dockerOK(t, d, "ps", "--filter", "name=second/other", "--format", "{{.Names}}"); out != "first" {
		t.Errorf("ps --filter name=second/other = %q", out)
	}
	if out := dockerOK(t, d, "ps", "--no-trunc", "--filter", "name=first", "--format", "{{.Names}}"); out != "first,second/first,second/other" {
		t.Errorf("ps --no-trunc names = %q", out)
	}

	var links []string
	if err := json.Unmarshal([]byte(dockerOK(t, d, "inspect", "-f", "{{json .HostConfig.Links}}", "second")), &links); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(links, []string{"/first:/second/first", "/first:/second/other"}) {
		t.Errorf("HostConfig.Links = %q", links)
	}
	dockerOK(t, d, "run", "-d", "--name", "short", "--link", "first", ref, "sleep", "300")
	if out := dockerOK(t, d, "inspect", "-f", "{{json .HostConfig.Links}}", "short"); out != `["/first:/short/first"]` {
		t.Errorf("short link in inspect = %s", out)
	}
	// Renaming the parent renames its links' names.
	dockerOK(t, d, "rename", "short", "brief")
	if out := dockerOK(t, d, "inspect", "-f", "{{json .HostConfig.Links}}", "brief"); out != `["/first:/brief/first"]` {
		t.Errorf("after renaming the parent = %s", out)
	}
	// rm --link takes the name away.
	dockerOK(t, d, "rm", "--link", "/second/other")
	if out := dockerOK(t, d, "ps", "--no-trunc", "--filter", "name=first", "--format", "{{.Names}}"); out != "brief/first,first,second/first" {
		t.Errorf("names after rm --link = %q", out)
	}

	out := dockerOK(t, d, "run", "--rm", "--link", "first:db", ref, "env")
	if strings.Contains(out, "DB_") {
		t.Errorf("link variables without DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS:\n%s", out)
	}
}

// With DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS=1 in the daemon's
// environment, as on Docker 29 (moby's TestLegacyLinksEnvVars), the
// linking container has the links' variables: the linked container's
// name, address and ports, and its environment; its own variables win.
func TestLegacyLinkEnv(t *testing.T) {
	ref := busybox(t)
	env, rt, data := daemonEnv(t)
	d := startDaemonEnv(t, append(env, "DOCKER_KEEP_DEPRECATED_LEGACY_LINKS_ENV_VARS=1"), filepath.Join(rt, "hutch.sock"))
	d.Runtime, d.Data = rt, data
	dockerOK(t, d, "pull", "-q", ref)
	dockerOK(t, d, "run", "-d", "--name", "db", "--expose", "5432", "--expose", "53/udp", "-e", "PASSWORD=s=cret", ref, "sleep", "300")
	ip := dockerOK(t, d, "inspect", "-f", "{{.NetworkSettings.Networks.bridge.IPAddress}}", "db")
	out := dockerOK(t, d, "run", "--rm", "--name", "web", "--link", "db:data-base", "-e", "DATA_BASE_ENV_PASSWORD=mine", ref, "env")
	got := map[string]string{}
	for _, l := range lines(out) {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		"DATA_BASE_NAME":                "/web/data-base",
		"DATA_BASE_PORT":                "tcp://" + ip + ":5432",
		"DATA_BASE_PORT_5432_TCP":       "tcp://" + ip + ":5432",
		"DATA_BASE_PORT_5432_TCP_ADDR":  ip,
		"DATA_BASE_PORT_5432_TCP_PORT":  "5432",
		"DATA_BASE_PORT_5432_TCP_PROTO": "tcp",
		"DATA_BASE_PORT_53_UDP":         "udp://" + ip + ":53",
		"DATA_BASE_PORT_53_UDP_PROTO":   "udp",
		"DATA_BASE_ENV_PASSWORD":        "mine",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"DATA_BASE_ENV_PATH", "DATA_BASE_ENV_HOME"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s is set", k)
		}
	}
	if t.Failed() {
		t.Logf("env:\n%s", out)
	}
}
