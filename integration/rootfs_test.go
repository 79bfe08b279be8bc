//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// storageContainer is a container of containers/storage: a writable
// layer of the daemon's (a container's rootfs or a spare of the pool).
type storageContainer struct {
	ID    string `json:"id"`
	Image string `json:"image"`
	Layer string `json:"layer"`
}

// storageContainers reads containers/storage's container records,
// durable and volatile, of whichever driver.
func storageContainers(t *testing.T, d *daemon) []storageContainer {
	t.Helper()
	var out []storageContainer
	files, _ := filepath.Glob(filepath.Join(d.Data, "hutch", "storage", "*-containers", "*containers.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		var list []storageContainer
		if err == nil {
			err = json.Unmarshal(b, &list)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, list...)
	}
	return out
}

// rootfsLayers lists the writable layers in the daemon's store: the
// containers of containers/storage, durable and volatile.
func rootfsLayers(t *testing.T, d *daemon) []string {
	t.Helper()
	var out []string
	for _, c := range storageContainers(t, d) {
		out = append(out, c.ID)
	}
	return out
}

// rootfsImages maps the writable layers in the daemon's store to the
// images they are made from.
func rootfsImages(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range storageContainers(t, d) {
		out[c.ID] = c.Image
	}
	return out
}

// A container's writable layer is deleted in the background after its
// record: a daemon killed in between leaves the layer, and the next start
// deletes it. Simulated by deleting the record of a created container
// while the daemon is down.
func TestWritableLayerSweptAfterCrash(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "create", ref, "true")
	if !slices.Contains(rootfsLayers(t, d), id) {
		t.Fatalf("no layer %s in %v", id, rootfsLayers(t, d))
	}
	killDaemons(t, d)
	if err := os.RemoveAll(filepath.Join(d.Data, "hutch", "containers", id)); err != nil {
		t.Fatal(err)
	}
	d2 := startDaemonEnv(t, d.env, d.Socket)
	deadline := time.Now().Add(10 * time.Second)
	for slices.Contains(rootfsLayers(t, d), id) {
		if time.Now().After(deadline) {
			t.Fatalf("the layer of a container without a record is still there after the restart\n%s", d2.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := dockerOK(t, d2, "run", "--rm", ref, "echo", "ok"); out != "ok" {
		t.Errorf("run after the sweep: %q", out)
	}
}

// An image whose last container was just removed can be deleted at once:
// the deletion waits for the container's layer to go, and takes the spare
// layers made for its next containers.
func TestImageRemoveAfterContainerRemove(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "run", "--name", "src", ref, "sh", "-c", "echo data > /f")
	dockerOK(t, d, "commit", "src", "solo:1")
	dockerOK(t, d, "rm", "src")
	for i := 0; i < 5; i++ {
		dockerOK(t, d, "run", "--rm", "solo:1", "cat", "/f")
		dockerOK(t, d, "rmi", "solo:1")
		if i < 4 {
			dockerOK(t, d, "tag", ref, "solo:tmp")
			dockerOK(t, d, "run", "--name", "src", ref, "sh", "-c", "echo data > /f")
			dockerOK(t, d, "commit", "src", "solo:1")
			dockerOK(t, d, "rm", "src")
			dockerOK(t, d, "rmi", "solo:tmp")
		}
	}
	solo := dockerOK(t, d, "commit", dockerOK(t, d, "create", ref), "solo:last")
	dockerOK(t, d, "run", "--rm", "solo:last", "true")
	dockerOK(t, d, "rmi", "solo:last")
	for layer, img := range rootfsImages(t, d) {
		if "sha256:"+img == solo || img == solo {
			t.Errorf("layer %s of the deleted image %s is left", layer, solo)
		}
	}
}

// layerOf returns the storage layer of rootfs id, from containers/storage's
// records.
func layerOf(t *testing.T, d *daemon, id string) string {
	t.Helper()
	for _, c := range storageContainers(t, d) {
		if c.ID == id {
			return c.Layer
		}
	}
	t.Fatalf("no rootfs %s", id)
	return ""
}

// A removed container's writable layer is emptied and given to the next
// container of its image: nothing of the first is visible in the second,
// its files, deletions (whiteouts) and changes to / included.
func TestWritableLayerReusedEmpty(t *testing.T) {
	d, ref := pulled(t)
	mode := dockerOK(t, d, "run", "--rm", ref, "stat", "-c", "%a", "/")
	// The first container of its kind gets a new layer named after it.
	id := dockerOK(t, d, "run", "-d", "--name", "first", ref, "sh", "-c",
		"echo secret > /leak; rm /bin/ls; mkdir -p /newdir/x; chmod 700 /; echo x >> /etc/passwd")
	dockerOK(t, d, "wait", "first")
	layer := layerOf(t, d, id)
	diff := filepath.Join(d.Data, "hutch", "storage", "overlay", layer, "diff")
	// Inspect shows the layer's directories, as Docker's overlay2 does.
	if upper := dockerOK(t, d, "inspect", "-f", "{{.GraphDriver.Name}} {{.GraphDriver.Data.UpperDir}}", id); upper != "overlay "+diff {
		t.Errorf("GraphDriver of inspect: %q, want overlay %s", upper, diff)
	}
	if ents, _ := os.ReadDir(diff); len(ents) == 0 {
		t.Fatalf("the first container's changes are not in %s", diff)
	}
	dockerOK(t, d, "rm", "first")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ents, err := os.ReadDir(diff); err == nil && len(ents) == 0 {
			break
		}
		// diff is made anew while it is emptied: only a layer directory
		// that is gone means a deleted layer.
		if _, err := os.Stat(filepath.Dir(diff)); err != nil {
			t.Fatalf("the removed container's layer was deleted, not kept for reuse: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed container's layer was not emptied")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The layer is kept once emptied, which the directory does not show:
	// spares are taken in turn, oldest first, so one of the next few
	// containers gets it (after a pause in creates the pool may have made
	// up to 8 spares, engine.poolReserve, ahead of it).
	found := false
	for i := 0; i < 12 && !found; i++ {
		if i > 0 {
			dockerOK(t, d, "rm", "-f", "second")
			time.Sleep(100 * time.Millisecond)
		}
		dockerOK(t, d, "run", "-d", "--name", "second", ref, "sleep", "60")
		pid := dockerOK(t, d, "inspect", "-f", "{{.State.Pid}}", "second")
		mi, err := os.ReadFile("/proc/" + pid + "/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		found = strings.Contains(string(mi), "/"+layer+"/diff")
	}
	if !found {
		t.Fatalf("no container was given the emptied layer %s", layer)
	}
	out := dockerOK(t, d, "exec", "second", "sh", "-c",
		"ls /leak /newdir 2>&1; ls /bin/ls; stat -c %a /; grep -c '^x$' /etc/passwd; true")
	want := "ls: /leak: No such file or directory\nls: /newdir: No such file or directory\n/bin/ls\n" + mode + "\n0"
	if out != want {
		t.Errorf("the second container sees the first's changes:\n%s\nwant\n%s", out, want)
	}
	if diff := dockerOK(t, d, "diff", "second"); diff != "" {
		t.Errorf("docker diff of an untouched container: %q", diff)
	}
	dockerOK(t, d, "rm", "-f", "second")
}

// dropSpares makes the daemon delete its spare writable layers: an image
// deletion does that first, here the removal of a tag.
func dropSpares(t *testing.T, d *daemon, ref string) {
	t.Helper()
	dockerOK(t, d, "tag", ref, "hutch-test/drop-spares:x")
	dockerOK(t, d, "rmi", "hutch-test/drop-spares:x")
}

// poolReserve is engine.poolReserve: the spares of the image last used
// that the pool makes after a pause in creates.
const poolReserve = 8

// waitSpares waits (up to 10 s) for the writable layers of a daemon
// without containers to reach poolReserve, the pool's top-up after a pause
// in creates, and returns them.
func waitSpares(t *testing.T, d *daemon) []string {
	t.Helper()
	spares := rootfsLayers(t, d)
	for deadline := time.Now().Add(10 * time.Second); len(spares) < poolReserve && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		spares = rootfsLayers(t, d)
	}
	return spares
}

// After a pause in creates the pool makes spare writable layers for the
// image last used (engine.poolReserve: 8), and the next containers take
// them instead of making their layers on the create's path: the first
// wave of concurrent runs after a quiet spell no longer queues behind
// containers/storage's lock.
func TestRootfsSparesAfterPause(t *testing.T) {
	d, ref := pulled(t)
	dockerOK(t, d, "rm", dockerOK(t, d, "create", ref, "true"))
	// No container is left: every writable layer is a spare.
	spares := waitSpares(t, d)
	if len(spares) != poolReserve {
		t.Fatalf("%d spare layers after the pause, want %d\n%s", len(spares), poolReserve, d.Log())
	}
	layers := map[string]bool{}
	for _, id := range spares {
		layers[layerOf(t, d, id)] = true
	}
	for i := range poolReserve {
		id := dockerOK(t, d, "create", ref, "true")
		upper := dockerOK(t, d, "inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", id)
		if layer := filepath.Base(filepath.Dir(upper)); !layers[layer] {
			t.Errorf("container %d got layer %s, not one of the spares", i+1, layer)
		}
	}
}
