//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// storeProblems reads the daemon's containers/storage records from disk
// and lists what an interrupted operation could leave behind: layers that
// no image or container uses, layers flagged incomplete, layer directories
// without a record, staged deletions, temporary files, and container
// record directories half-written or half-deleted.
func storeProblems(t *testing.T, d *daemon) []string {
	t.Helper()
	graph := filepath.Join(d.Data, "hutch", "storage")
	readList := func(glob string) []json.RawMessage {
		var out []json.RawMessage
		files, _ := filepath.Glob(filepath.Join(graph, glob))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(bytes.TrimSpace(b)) == 0 {
				continue
			}
			var part []json.RawMessage
			if err := json.Unmarshal(b, &part); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, part...)
		}
		return out
	}
	rawLayers := readList("*-layers/*layers.json")
	rawImages := readList("*-images/images.json")
	rawContainers := readList("*-containers/*containers.json")
	if len(rawLayers) == 0 && len(rawImages) > 0 {
		t.Fatalf("images but no layer records under %s: the store layout changed", graph)
	}
	type layer struct {
		ID, Parent string
		Flags      map[string]any
	}
	layers := map[string]layer{}
	for _, raw := range rawLayers {
		var l layer
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		layers[l.ID] = l
	}
	var roots []string
	for _, raw := range rawImages {
		var i struct {
			ID     string
			Layer  string   `json:"layer"`
			Mapped []string `json:"mapped-layers"`
		}
		if err := json.Unmarshal(raw, &i); err != nil {
			t.Fatal(err)
		}
		roots = append(append(roots, i.Layer), i.Mapped...)
	}
	for _, raw := range rawContainers {
		var c struct {
			Layer string `json:"layer"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, c.Layer)
	}
	used := map[string]bool{}
	for _, id := range roots {
		for ; id != "" && !used[id]; id = layers[id].Parent {
			used[id] = true
		}
	}
	var out []string
	for id, l := range layers {
		if !used[id] {
			out = append(out, "layer no image or container uses: "+id)
		}
		if l.Flags["incomplete"] == true {
			out = append(out, "incomplete layer: "+id)
		}
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, dir := range []string{"overlay", "vfs/dir"} {
		ents, _ := os.ReadDir(filepath.Join(graph, dir))
		for _, e := range ents {
			if hex64.MatchString(e.Name()) && layers[e.Name()].ID == "" {
				out = append(out, "layer directory without a record: "+dir+"/"+e.Name())
			}
		}
	}
	for _, dir := range []string{"tmp", "overlay/tempdirs", "overlay-layers/tmp", "vfs/tempdirs", "vfs-layers/tmp"} {
		ents, _ := os.ReadDir(filepath.Join(graph, dir))
		for _, e := range ents {
			out = append(out, "left in "+dir+": "+e.Name())
		}
	}
	ents, _ := os.ReadDir(filepath.Join(d.Data, "hutch", "containers"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, "container records: "+e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// settledStoreProblems is storeProblems once the background deletion of
// layers (of removed containers, or found at a restart) has had up to 10 s.
func settledStoreProblems(t *testing.T, d *daemon) []string {
	t.Helper()
	probs := storeProblems(t, d)
	for deadline := time.Now().Add(10 * time.Second); len(probs) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		probs = storeProblems(t, d)
	}
	return probs
}

// dataMounts lists the engine's mounts below the daemon's data and state
// directories (layer and rootfs mounts).
func dataMounts(t *testing.T, d *daemon) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(readProc(t, enginePID(t, d), "mountinfo"), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (strings.HasPrefix(f[4], d.Data+"/") || strings.HasPrefix(f[4], d.Runtime+"/")) {
			out = append(out, f[4])
		}
	}
	slices.Sort(out)
	return out
}

// restarted starts the daemon again on d's directories after a kill.
func restarted(t *testing.T, d *daemon) *daemon {
	t.Helper()
	d2 := startDaemonEnv(t, d.env, d.Socket)
	d2.Runtime, d2.Data = d.Runtime, d.Data
	return d2
}

// killAt runs op in the background, kills the daemon with -9 as soon as
// reached says the operation got to the point under test (or when op
// ends first), and waits for op. It reports whether the kill came while
// op was at that point.
func killAt(t *testing.T, d *daemon, op func(), reached func() bool) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); op() }()
	caught := false
	deadline := time.Now().Add(2 * time.Minute)
	for !caught && time.Now().Before(deadline) {
		select {
		case <-done:
		default:
			if caught = reached(); !caught {
				time.Sleep(time.Millisecond)
			}
			continue
		}
		break
	}
	killDaemons(t, d)
	<-done
	return caught
}

// kill -9 in the middle of docker commit, while the diff is written and
// while it is stored as a layer: after a restart the container is intact,
// no half-made image or layer is visible or left on disk, no mount is left,
// and the commit, retried, gives a whole image.
func TestKill9DuringCommit(t *testing.T) {
	d, ref := pulled(t)
	// 32 MiB and 2 000 files to commit: long enough to be caught mid-way.
	must(t, d, "run", "--name", "big", ref, "sh", "-c",
		"head -c 33554432 /dev/urandom > /big && mkdir /many && cd /many && seq 2000 | xargs touch")
	id := must(t, d, "inspect", "--format", "{{.Id}}", "big")
	mounts := dataMounts(t, d)
	commitDir := filepath.Join(d.Data, "hutch", "storage", "tmp", "commit-*")
	hex64 := regexp.MustCompile(`/[0-9a-f]{64}$`)
	points := []struct {
		name    string
		reached func() bool
	}{
		{"writing the diff", func() bool {
			m, _ := filepath.Glob(filepath.Join(commitDir, "layer-*"))
			return len(m) > 0
		}},
		{"storing the layer", func() bool {
			m, _ := filepath.Glob(filepath.Join(commitDir, "*"))
			return slices.ContainsFunc(m, hex64.MatchString)
		}},
	}
	for i, p := range points {
		tag := "committed:" + itoa(i)
		caught := false
		for attempt := 0; attempt < 3 && !caught; attempt++ {
			caught = killAt(t, d, func() { d.Docker(t, "commit", "big", tag) }, p.reached)
			d = restarted(t, d)
			if !caught {
				t.Logf("%s: the commit ended before the kill (attempt %d)", p.name, attempt+1)
				must(t, d, "rmi", tag)
			}
		}
		if !caught {
			t.Fatalf("%s: never caught the commit there in 3 attempts", p.name)
		}
		if got := must(t, d, "inspect", "--format", "{{.Id}} {{.State.Status}}", "big"); got != id+" exited" {
			t.Errorf("%s: the container after kill -9 and restart: %q", p.name, got)
		}
		if out, _ := d.Docker(t, "images", "-q", tag); strings.TrimSpace(out) != "" {
			// The kill came after the image was recorded: it must be whole.
			t.Logf("%s: the image was recorded before the kill", p.name)
			if out := must(t, d, "run", "--rm", tag, "sh", "-c", "wc -c < /big; ls /many | wc -l"); strings.Join(strings.Fields(out), " ") != "33554432 2000" {
				t.Errorf("%s: the image recorded before the kill is not whole: %q", p.name, out)
			}
			must(t, d, "rmi", tag)
		}
		if got := must(t, d, "images", "--format", "{{.Repository}}:{{.Tag}}"); got != ref {
			t.Errorf("%s: images after kill -9 and restart: %q, want only %s", p.name, got, ref)
		}
		if probs := settledStoreProblems(t, d); len(probs) > 0 {
			t.Errorf("%s: after kill -9 and restart:\n%s", p.name, strings.Join(probs, "\n"))
		}
		if got := dataMounts(t, d); !slices.Equal(got, mounts) {
			t.Errorf("%s: mounts %q, before the kill %q", p.name, got, mounts)
		}
		// The commit, retried, is whole.
		must(t, d, "commit", "big", tag)
		if out := must(t, d, "run", "--rm", tag, "sh", "-c", "wc -c < /big; ls /many | wc -l"); strings.Join(strings.Fields(out), " ") != "33554432 2000" {
			t.Errorf("%s: the retried commit's content: %q", p.name, out)
		}
		if got := dataMounts(t, d); !slices.Equal(got, mounts) {
			t.Errorf("%s: mounts after the retried commit %q, want %q", p.name, got, mounts)
		}
		must(t, d, "rmi", tag)
	}
	if probs := settledStoreProblems(t, d); len(probs) > 0 {
		t.Errorf("at the end:\n%s", strings.Join(probs, "\n"))
	}
}

// hasCompleteLayer reports whether d's store holds a layer it finished
// writing. It reads the records while the store rewrites them: a file
// being replaced counts as no.
func hasCompleteLayer(d *daemon) bool {
	b, err := os.ReadFile(filepath.Join(d.Data, "hutch", "storage", "overlay-layers", "layers.json"))
	if err != nil {
		return false
	}
	var ls []struct {
		ID    string
		Flags map[string]any
	}
	if json.Unmarshal(b, &ls) != nil {
		return false
	}
	for _, l := range ls {
		if l.Flags["incomplete"] != true {
			return true
		}
	}
	return false
}

// rootfsLayer returns the storage layer of container id's rootfs, from
// its inspect (GraphDriver.Data.UpperDir is <graphroot>/overlay/<layer>/diff).
func rootfsLayer(t *testing.T, d *daemon, id string) string {
	t.Helper()
	upper := must(t, d, "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", id)
	if filepath.Base(upper) != "diff" {
		t.Fatalf("container %s: UpperDir %q", id, upper)
	}
	return filepath.Base(filepath.Dir(upper))
}

// kill -9 in the middle of docker rm: of a running container once its
// removal is recorded, and of a stopped one while its layer is deleted.
// After a restart the removal is finished (or the container is listed and
// can be removed again), the other container is untouched and still runs,
// nothing of the removed one is left on disk, mounted or in the runtime
// state, and its name can be used again.
func TestKill9DuringRemove(t *testing.T) {
	d, ref := pulled(t)
	// Without a network of its own: a networked container does not outlive
	// a kill -9 of the daemon (TestRestartEndsNetworklessContainers).
	keep := must(t, d, "run", "-d", "--name", "bystander", "--network", "none", ref, "sleep", "300")
	graph := filepath.Join(d.Data, "hutch", "storage")
	// 10 000 files in the container's layer: deleting them takes a while.
	const fill = "mkdir /many && cd /many && seq 10000 | xargs touch"
	points := []struct {
		name    string
		running bool
		reached func(id, layer string) bool
	}{
		{"removal of a running container recorded", true, func(id, _ string) bool {
			b, _ := os.ReadFile(filepath.Join(d.Data, "hutch", "containers", id, "container.json"))
			return bytes.Contains(b, []byte(`"Removing":true`))
		}},
		// The record goes first; the layer is emptied (or deleted) after,
		// in the background.
		{"emptying the layer after the record went", false, func(id, layer string) bool {
			if _, err := os.Stat(filepath.Join(d.Data, "hutch", "containers", id)); !os.IsNotExist(err) {
				return false
			}
			ents, _ := os.ReadDir(filepath.Join(graph, "overlay", layer, "diff"))
			return len(ents) > 0
		}},
	}
	for _, p := range points {
		caught := false
		for attempt := 0; attempt < 3 && !caught; attempt++ {
			var id string
			if p.running {
				id = must(t, d, "run", "-d", "--name", "victim", ref, "sh", "-c", fill+" && touch /ready && exec sleep 300")
				waitFor(t, func() bool { _, err := d.Docker(t, "exec", "victim", "test", "-f", "/ready"); return err == nil })
			} else {
				must(t, d, "run", "--name", "victim", ref, "sh", "-c", fill)
				id = must(t, d, "inspect", "--format", "{{.Id}}", "victim")
			}
			layer := rootfsLayer(t, d, id)
			caught = killAt(t, d, func() { d.Docker(t, "rm", "-f", "victim") }, func() bool { return p.reached(id, layer) })
			d = restarted(t, d)
			if !caught {
				t.Logf("%s: the removal ended before the kill (attempt %d)", p.name, attempt+1)
			}
			// The removal was finished at restart, or can be done again.
			if out, err := d.Docker(t, "inspect", "--format", "{{.State.Status}}", id); err == nil {
				t.Logf("%s: after restart the container is %s", p.name, strings.TrimSpace(out))
				must(t, d, "rm", "-f", id)
			}
			if out, err := d.Docker(t, "inspect", id); err == nil || !strings.Contains(out, "No such") {
				t.Errorf("%s: the container is still there: %v %s", p.name, err, out)
			}
			if got := must(t, d, "inspect", "--format", "{{.Id}} {{.State.Status}}", "bystander"); got != keep+" running" {
				t.Errorf("%s: the other container after kill -9 and restart: %q", p.name, got)
			}
			// The restart deletes what no record owns in the background.
			if probs := settledStoreProblems(t, d); len(probs) > 0 {
				t.Errorf("%s: after kill -9 and restart:\n%s", p.name, strings.Join(probs, "\n"))
			}
			if _, err := os.Stat(filepath.Join(d.Data, "hutch", "containers", id)); !os.IsNotExist(err) {
				t.Errorf("%s: the container's record directory is left: %v", p.name, err)
			}
			// A layer the record no longer owns goes at the restart.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(graph, "overlay", layer)); os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: the removed container's layer %s is left", p.name, layer)
					break
				}
			}
			for _, m := range dataMounts(t, d) {
				if strings.Contains(m, layer) || strings.Contains(m, id) {
					t.Errorf("%s: still mounted: %s", p.name, m)
				}
			}
			if files := sandboxFiles(t, d); slices.Contains(files, id) {
				t.Errorf("%s: the network namespace of the removed container is left: %v", p.name, files)
			}
		}
		if !caught {
			t.Fatalf("%s: never caught the removal there in 3 attempts", p.name)
		}
	}
	// The name is free again, and the adopted container can still be stopped.
	must(t, d, "run", "--rm", "--name", "victim", ref, "true")
	must(t, d, "rm", "-f", "bystander")
	if probs := settledStoreProblems(t, d); len(probs) > 0 {
		t.Errorf("at the end:\n%s", strings.Join(probs, "\n"))
	}
}
