//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// docker events: the events of a container's life, of a volume and a
// network, replayed with --since and --until, followed live, and filtered.
func TestEvents(t *testing.T) {
	d, ref := pulled(t)
	since := fmt.Sprint(time.Now().Add(-time.Second).Unix())
	id := dockerOK(t, d, "run", "-d", "--name", "evt", "--label", "team=a", ref, "sh", "-c", "exit 3")
	dockerOK(t, d, "wait", id)
	dockerOK(t, d, "rm", "evt")
	// Not "evt…": as in Docker, the container filter takes any actor whose
	// ID starts with the value, a volume too.
	dockerOK(t, d, "volume", "create", "vol-e")
	dockerOK(t, d, "volume", "rm", "vol-e")
	until := fmt.Sprint(time.Now().Add(time.Second).Unix())
	format := `{{.Type}} {{.Action}} {{index .Actor.Attributes "name"}} {{index .Actor.Attributes "exitCode"}}`

	out := dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "container=evt", "--format", format)
	want := "container create evt \ncontainer start evt \ncontainer die evt 3\ncontainer destroy evt"
	if out != want {
		t.Errorf("events of container evt:\n%s\nwant\n%s", out, want)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "type=volume", "--format", "{{.Action}} {{.Actor.ID}} {{.Actor.Attributes.driver}}")
	if out != "create vol-e local\ndestroy vol-e local" {
		t.Errorf("volume events: %q", out)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "label=team=a", "--filter", "event=die", "--format", "{{.Actor.ID}}")
	if out != id {
		t.Errorf("die events with label team=a: %q, want %s", out, id)
	}

	dockerOK(t, d, "run", "-d", "--name", "evx", ref, "sleep", "60")
	if _, err := d.Docker(t, "exec", "evx", "sh", "-c", "exit 4"); err == nil {
		t.Error("docker exec of exit 4 succeeded")
	}
	dockerOK(t, d, "rm", "-f", "evx")
	out = dockerOK(t, d, "events", "--since", since, "--until", fmt.Sprint(time.Now().Add(time.Second).Unix()), "--filter", "container=evx",
		"--filter", "event=exec_create", "--filter", "event=exec_start", "--filter", "event=exec_die", "--filter", "event=kill",
		"--format", `{{.Action}} {{index .Actor.Attributes "exitCode"}}{{index .Actor.Attributes "signal"}}`)
	if out != "exec_create: sh -c exit 4 \nexec_start: sh -c exit 4 \nexec_die 4\nkill 9" {
		t.Errorf("exec and kill events: %q", out)
	}

	// docker run attaches before it starts; tag and untag are the image's.
	dockerOK(t, d, "run", "--rm", "--name", "evf", ref, "true")
	dockerOK(t, d, "tag", ref, "evtag:1")
	dockerOK(t, d, "rmi", "evtag:1")
	until = fmt.Sprint(time.Now().Add(time.Second).Unix())
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "container=evf", "--filter", "event=attach", "--filter", "event=start", "--format", `{{.Action}}`)
	if out != "attach\nstart" {
		t.Errorf("attach and start events of docker run: %q", out)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "type=image", "--filter", "image=evtag:1", "--format", `{{.Action}} {{.Actor.Attributes.name}}`)
	if out != "tag evtag:1\nuntag evtag:1" {
		t.Errorf("tag and untag events: %q", out)
	}

	// What a run does to its network and volume; top, cp, export, save.
	dir := t.TempDir()
	evv := dockerOK(t, d, "run", "-d", "--name", "evv", "-v", "evvol:/data", ref, "sleep", "60")
	dockerOK(t, d, "top", "evv")
	dockerOK(t, d, "cp", "evv:/etc/passwd", dir+"/passwd")
	dockerOK(t, d, "cp", dir+"/passwd", "evv:/tmp/")
	dockerOK(t, d, "export", "-o", dir+"/evv.tar", "evv")
	dockerOK(t, d, "rm", "-f", "evv")
	dockerOK(t, d, "save", "-o", dir+"/img.tar", ref)
	until = fmt.Sprint(time.Now().Add(time.Second).Unix())
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "container=evv",
		"--filter", "event=top", "--filter", "event=archive-path", "--filter", "event=extract-to-dir", "--filter", "event=export", "--format", `{{.Action}}`)
	if out != "top\narchive-path\nextract-to-dir\nexport" {
		t.Errorf("top, cp and export events: %q", out)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "volume=evvol", "--format", `{{.Action}} {{index .Actor.Attributes "container"}} {{index .Actor.Attributes "destination"}}`)
	if out != "create  \nmount "+evv+" /data\nunmount "+evv {
		t.Errorf("volume events of a run: %q", out)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "type=network", "--filter", "event=connect", "--filter", "event=disconnect", "--format", `{{.Action}} {{.Actor.Attributes.name}} {{.Actor.Attributes.container}}`)
	if !strings.Contains(out, "connect bridge "+evv+"\n") || !strings.Contains(out, "disconnect bridge "+evv) {
		t.Errorf("network events of a run: %q", out)
	}
	out = dockerOK(t, d, "events", "--since", since, "--until", until, "--filter", "type=image", "--filter", "event=save", "--format", `{{.Actor.Attributes.name}}`)
	if !strings.Contains(out, strings.TrimSuffix(ref, ":latest")) {
		t.Errorf("image save events: %q", out)
	}

	// Followed: the stream shows what happens after it began.
	done := make(chan string)
	go func() {
		out, _ := d.Docker(t, "events", "--until", fmt.Sprint(time.Now().Add(4*time.Second).Unix()), "--filter", "type=network", "--format", "{{.Action}} {{.Actor.Attributes.name}}")
		done <- strings.TrimSpace(out)
	}()
	time.Sleep(time.Second)
	dockerOK(t, d, "network", "create", "evtnet")
	dockerOK(t, d, "network", "rm", "evtnet")
	if out := <-done; out != "create evtnet\ndestroy evtnet" {
		t.Errorf("followed network events: %q", out)
	}

	if out, err := d.Docker(t, "events", "--since", since, "--until", until, "--filter", "nope=1"); err == nil || !strings.Contains(out, "invalid filter 'nope'") {
		t.Errorf("events with a bad filter: %v, %q", err, out)
	}
}
