//go:build integration

package integration

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docker ps --filter ancestor= lists the containers of the images made
// from the image too (Docker's populateImageFilterByParents), whatever
// form names it; docker container prune takes until, label and label!
// and refuses the filters of ps (Docker's containersAcceptedFilters);
// every prune keeps what all its label! values match, and sends Docker's
// prune event.
func TestPsAncestorAndPruneFilters(t *testing.T) {
	d, ref := pulled(t)
	since := strconv.FormatInt(time.Now().Unix()-1, 10)
	dockerOK(t, d, "run", "--name", "base", "--label", "keep=yes", ref, "sh", "-c", "echo x > /f")
	dockerOK(t, d, "commit", "base", "child:1")
	dockerOK(t, d, "run", "-d", "--name", "kid", "child:1", "sleep", "1000")
	dockerOK(t, d, "create", "--name", "fresh", "--label", "tier=db", ref, "true")

	digestRef := dockerOK(t, d, "image", "inspect", "-f", "{{index .RepoDigests 0}}", ref)
	imageID := dockerOK(t, d, "image", "inspect", "-f", "{{.Id}}", ref)
	childID := dockerOK(t, d, "image", "inspect", "-f", "{{.Id}}", "child:1")
	for filter, want := range map[string]string{
		"ancestor=" + ref:                    "fresh kid base",
		"ancestor=" + digestRef:              "fresh kid base",
		"ancestor=" + imageID:                "fresh kid base",
		"ancestor=" + imageID[7:19]:          "fresh kid base",
		"ancestor=child:1":                   "kid",
		"ancestor=" + childID[7:19]:          "kid",
		"ancestor=nosuch:1":                  "",
		"label=keep":                         "kid base", // child:1 has base's labels
		"status=created":                     "fresh",
		"exited=0":                           "base",
		"before=kid":                         "base",
		"since=base":                         "fresh kid",
		"name=^/k":                           "kid",
		"health=none":                        "fresh kid base",
		"is-task=true":                       "",
		"volume=/nowhere":                    "",
		"network=bridge":                     "fresh kid base",
		"ancestor=child:1 --filter exited=0": "",
	} {
		args := append([]string{"ps", "-a", "--format", "{{.Names}}", "--filter"}, strings.Split(filter, " ")...)
		if got := strings.Join(strings.Fields(dockerOK(t, d, args...)), " "); got != want {
			t.Errorf("docker ps -a --filter %s: %q, want %q", filter, got, want)
		}
	}

	// container prune: a filter of ps is refused, and removes nothing.
	if out, err := d.Docker(t, "container", "prune", "-f", "--filter", "name=base"); err == nil || !strings.Contains(out, "invalid filter 'name'") {
		t.Errorf("container prune --filter name=: %v %q", err, out)
	}
	left := func() string {
		return strings.Join(strings.Fields(dockerOK(t, d, "ps", "-a", "--format", "{{.Names}}")), " ")
	}
	dockerOK(t, d, "container", "prune", "-f", "--filter", "until=1h")
	if got := left(); got != "fresh kid base" {
		t.Errorf("after prune --filter until=1h (all newer): %q", got)
	}
	dockerOK(t, d, "container", "prune", "-f", "--filter", "label!=keep")
	if got := left(); got != "kid base" {
		t.Errorf("after prune --filter label!=keep: %q, want kid base", got)
	}
	dockerOK(t, d, "container", "prune", "-f", "--filter", "label=keep=yes")
	if got := left(); got != "kid" {
		t.Errorf("after prune --filter label=keep=yes: %q, want kid (running)", got)
	}
	dockerOK(t, d, "image", "prune", "-f")

	// Every prune keeps what its label! values match in full (Docker's
	// MatchKVList): one value that does not hold lets the object go.
	dockerOK(t, d, "volume", "create", "--label", "keep=yes", "vkeep")
	dockerOK(t, d, "network", "create", "--label", "keep=yes", "nkeep")
	dockerOK(t, d, "volume", "prune", "-af", "--filter", "label!=keep", "--filter", "label!=other")
	dockerOK(t, d, "network", "prune", "-f", "--filter", "label!=keep", "--filter", "label!=other")
	if v, n := dockerOK(t, d, "volume", "ls", "-q"), dockerOK(t, d, "network", "ls", "-q", "--filter", "name=nkeep"); v != "" || n != "" {
		t.Errorf("after prunes with label!=keep and label!=other: volumes %q, networks %q; want both gone", v, n)
	}

	until := strconv.FormatInt(time.Now().Unix()+1, 10)
	events := dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "event=prune", "--format", "{{.Type}} {{.Action}} {{.Actor.ID}}{{.Actor.Attributes.reclaimed}}")
	line := regexp.MustCompile(`^(container|image|volume|network) prune [0-9]+$`)
	lines := strings.Split(events, "\n")
	if len(lines) != 6 || slices.ContainsFunc(lines, func(l string) bool { return !line.MatchString(l) }) ||
		strings.Count(events, "container prune ") != 3 || strings.Count(events, "image prune ") != 1 ||
		strings.Count(events, "volume prune ") != 1 || !strings.Contains(events, "network prune 0") {
		t.Errorf("prune events:\n%s\nwant 3 of containers (none for the refused prune), 1 of images, 1 of volumes and 1 of networks (reclaimed 0), without actor IDs", events)
	}
	dockerOK(t, d, "rm", "-f", "kid")
}
