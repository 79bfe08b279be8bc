package build

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
)

// fakeBackend keeps images and containers in memory; RUN "exit N" exits
// with N, anything else 0 with its command echoed.
type fakeBackend struct {
	images     map[string]Image
	containers map[string]*containertypes.Config
	runs       [][]string // argv and env of each RUN
	runHealth  [][]string // the healthcheck test of each RUN's container
	history    map[string]string
	parents    map[string]string
	removed    []string
	tags       map[string]string
	n          int
}

func newFake() *fakeBackend {
	return &fakeBackend{
		images:     map[string]Image{"base": {ID: "sha256:base", Config: containertypes.Config{Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}}}},
		containers: map[string]*containertypes.Config{},
		history:    map[string]string{},
		parents:    map[string]string{},
		tags:       map[string]string{},
	}
}

func (f *fakeBackend) Image(_ context.Context, ref string, _ bool, _ Output) (Image, error) {
	if img, ok := f.images[ref]; ok {
		return img, nil
	}
	for _, img := range f.images {
		if img.ID == ref {
			return img, nil
		}
	}
	return Image{}, errdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

func (f *fakeBackend) Create(_ context.Context, cfg *containertypes.Config, _ *containertypes.HostConfig) (string, error) {
	f.n++
	id := fmt.Sprintf("c%063d", f.n)
	c := cloneConfig(*cfg)
	f.containers[id] = &c
	return id, nil
}

func (f *fakeBackend) Run(_ context.Context, id string, w io.Writer) (int, error) {
	c := f.containers[id]
	f.runs = append(f.runs, append(slices.Clone(c.Cmd), c.Env...))
	if c.Healthcheck != nil {
		f.runHealth = append(f.runHealth, c.Healthcheck.Test)
	}
	last := c.Cmd[len(c.Cmd)-1]
	var code int
	if _, err := fmt.Sscanf(last, "exit %d", &code); err == nil {
		return code, nil
	}
	fmt.Fprintf(w, "ran %s\n", last)
	return 0, nil
}

func (f *fakeBackend) Stat(context.Context, string, string) (bool, bool, error) {
	return false, false, nil
}
func (f *fakeBackend) Owner(context.Context, string, string) (int, int, error) { return 1, 2, nil }
func (f *fakeBackend) Extract(_ context.Context, _ string, r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (f *fakeBackend) Archive(context.Context, string, string) (io.ReadCloser, error) {
	return nil, errdefs.ErrNotFound
}

func (f *fakeBackend) Commit(_ context.Context, id string, cfg *containertypes.Config, createdBy, _ string) (string, error) {
	f.n++
	img := fmt.Sprintf("sha256:%064d", f.n)
	f.images[img] = Image{ID: img, Config: cloneConfig(*cfg)}
	f.history[img] = createdBy
	f.parents[img] = f.containers[id].Image
	return img, nil
}

func (f *fakeBackend) Remove(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	delete(f.containers, id)
	return nil
}
func (f *fakeBackend) Cached(_ context.Context, parent, createdBy string, cfg *containertypes.Config) (string, error) {
	for id, img := range f.images {
		if f.parents[id] == parent && f.history[id] == createdBy && fmt.Sprint(img.Config) == fmt.Sprint(*cfg) {
			return id, nil
		}
	}
	return "", nil
}
func (f *fakeBackend) Tag(_ context.Context, id, ref string) error { f.tags[ref] = id; return nil }

// recorder keeps the output; an aux ID is written into the text too, as
// "<aux ID>\n", to show where it came.
type recorder struct {
	mu   sync.Mutex
	text strings.Builder
	id   string   // the last aux ID
	ids  []string // every aux ID
}

func (r *recorder) Stream(s string)             { r.mu.Lock(); r.text.WriteString(s); r.mu.Unlock() }
func (r *recorder) Progress(jsonstream.Message) {}
func (r *recorder) ImageID(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.id, r.ids = id, append(r.ids, id)
	fmt.Fprintf(&r.text, "<aux %s>\n", id)
}

func build(t *testing.T, f *fakeBackend, df string, mod func(*Request)) (Image, *recorder, error) {
	t.Helper()
	req := Request{Dockerfile: []byte(df), Remove: true, Tags: []string{"out:1"}}
	if mod != nil {
		mod(&req)
	}
	out := &recorder{}
	id, err := Run(context.Background(), f, req, out)
	if err != nil {
		return Image{}, out, err
	}
	return f.images[id], out, nil
}

func TestConfigInstructions(t *testing.T) {
	f := newFake()
	img, out, err := build(t, f, `FROM base
ENV A=1 B="two words"
LABEL team=hutch
WORKDIR /srv
WORKDIR sub
EXPOSE 80 90-91/udp
USER nobody
VOLUME /data
STOPSIGNAL SIGINT
SHELL ["/bin/ash", "-c"]
ENTRYPOINT echo
ONBUILD RUN true
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := img.Config
	if !slices.Equal(c.Env, []string{"PATH=/bin", "A=1", "B=two words"}) || c.Labels["team"] != "hutch" || c.WorkingDir != "/srv/sub" ||
		c.User != "nobody" || c.StopSignal != "SIGINT" || len(c.ExposedPorts) != 3 || c.Volumes == nil {
		t.Errorf("config = %+v", c)
	}
	// ENTRYPOINT resets the inherited CMD, in the shell SHELL set.
	if c.Cmd != nil || !slices.Equal(c.Entrypoint, []string{"/bin/ash", "-c", "echo"}) || !slices.Equal(c.OnBuild, []string{"RUN true"}) {
		t.Errorf("cmd %q entrypoint %q onbuild %q", c.Cmd, c.Entrypoint, c.OnBuild)
	}
	if !strings.Contains(out.text.String(), "Step 12/12 : ONBUILD RUN true") || !strings.Contains(out.text.String(), "Successfully tagged out:1") {
		t.Errorf("output:\n%s", out.text.String())
	}
	if out.id != img.ID || f.tags["out:1"] != img.ID {
		t.Errorf("aux %q tags %v, image %q", out.id, f.tags, img.ID)
	}
	// Each step's image is kept (the cache), the step containers are not.
	if len(f.images) != 12 || len(f.containers) != 0 {
		t.Errorf("%d images and %d containers left", len(f.images), len(f.containers))
	}
}

func TestRunArgs(t *testing.T) {
	f := newFake()
	v := "from-cli"
	img, out, err := build(t, f, `ARG TAG=base
FROM ${TAG}
ARG X
ARG Y=default
ENV Y=env
CMD ["keep"]
ENTRYPOINT ["e"]
RUN echo $X $Y
`, func(r *Request) { r.BuildArgs = map[string]*string{"X": &v, "HTTP_PROXY": &v, "UNUSED": &v} })
	if err != nil {
		t.Fatal(err)
	}
	run := f.runs[0]
	if !slices.Equal(run[:3], []string{"/bin/sh", "-c", "echo $X $Y"}) || !slices.Contains(run, "X=from-cli") ||
		!slices.Contains(run, "HTTP_PROXY=from-cli") || !slices.Contains(run, "Y=env") || slices.Contains(run, "Y=default") {
		t.Errorf("RUN argv and env = %q", run)
	}
	if h := f.history[img.ID]; h != "|1 X=from-cli /bin/sh -c echo $X $Y" {
		t.Errorf("RUN history = %q", h)
	}
	if !slices.Equal(img.Config.Cmd, []string{"keep"}) || slices.Contains(img.Config.Env, "X=from-cli") {
		t.Errorf("config after RUN: %+v", img.Config)
	}
	if !strings.Contains(out.text.String(), "ran echo $X $Y") || !strings.Contains(out.text.String(), "[UNUSED]") {
		t.Errorf("output:\n%s", out.text.String())
	}
}

func TestStagesAndTarget(t *testing.T) {
	f := newFake()
	img, _, err := build(t, f, `FROM base AS one
ENV STAGE=one
FROM one AS two
ENV STAGE=two
FROM base
ENV STAGE=three
`, func(r *Request) { r.Target = "two" })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(img.Config.Env, "STAGE=two") {
		t.Errorf("target two built %+v", img.Config)
	}
	if _, _, err := build(t, f, "FROM base\n", func(r *Request) { r.Target = "nope" }); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown target: %v", err)
	}
}

// Every stage ends with its image's ID as aux, before the next stage's
// FROM, as Docker's classic builder emits it; a quiet build sends none.
func TestStageImageIDs(t *testing.T) {
	f := newFake()
	df := "FROM base AS one\nENV STAGE=one\nFROM one AS two\nENV STAGE=two\nFROM base\nENV STAGE=three\n"
	img, out, err := build(t, f, df, func(r *Request) { r.Labels = map[string]string{"l": "1"} })
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ids) != 3 || out.ids[2] != img.ID || out.ids[0] == out.ids[1] || out.ids[1] == out.ids[2] {
		t.Fatalf("aux IDs %q, image %s", out.ids, img.ID)
	}
	text := out.text.String()
	order := []string{"<aux " + out.ids[0] + ">", "Step 3/7 : FROM one AS two", "<aux " + out.ids[1] + ">", "Step 5/7 : FROM base",
		"Step 7/7 : LABEL l=1", "<aux " + img.ID + ">", "Successfully built " + shortID(img.ID), "Successfully tagged out:1"}
	at := 0
	for _, s := range order {
		i := strings.Index(text[at:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", s, text)
		}
		at += i
	}
	if p := f.parents[out.ids[1]]; p != out.ids[0] {
		t.Errorf("stage two's image %s is not on stage one's %s (parent %s)", out.ids[1], out.ids[0], p)
	}

	_, out, err = build(t, f, df, func(r *Request) { r.Quiet = true })
	if lines := strings.Split(out.text.String(), "\n"); err != nil || len(out.ids) != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "sha256:") {
		t.Errorf("quiet build: aux %q, output %q, %v", out.ids, out.text.String(), err)
	}
}

func TestBuildErrors(t *testing.T) {
	for df, want := range map[string]string{
		"FROM base\nRUN exit 7\n":                    "The command '/bin/sh -c exit 7' returned a non-zero code: 7",
		"FROM base\nRUN --network=none true\n":       "the --network option requires BuildKit",
		"FROM base\nCOPY --link a /b\n":              "the --link option requires BuildKit",
		"FROM base\nADD --checksum=sha256:00 a /b\n": "the --checksum option requires BuildKit",
		"FROM nosuch\n":                              "No such image: nosuch",
		"FROM scratch\n":                             "scratch",
		"FROM base\nNOPE x\n":                        "unknown instruction",
		"":                                           "no instructions",
		"FROM base\nCOPY --from=base *.txt /x/\n":    "wildcard in /",
		"FROM base\nEXPOSE notaport\n":               "notaport",
	} {
		f := newFake()
		_, _, err := build(t, f, df, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", df, err, want)
		}
		if len(f.images) > 2 {
			t.Errorf("%q: images left %v", df, f.images)
		}
	}
	// A failed RUN keeps its container unless ForceRemove.
	f := newFake()
	build(t, f, "FROM base\nRUN exit 1\n", nil)
	if len(f.containers) != 1 {
		t.Errorf("containers after a failed RUN: %d, want 1", len(f.containers))
	}
	f = newFake()
	build(t, f, "FROM base\nRUN exit 1\n", func(r *Request) { r.ForceRemove = true })
	if len(f.containers) != 0 {
		t.Errorf("containers after a failed RUN with ForceRemove: %d", len(f.containers))
	}
}

func TestDestPath(t *testing.T) {
	b := &builder{cur: &stageState{config: containertypes.Config{WorkingDir: "/app"}}}
	for in, want := range map[string]string{".": "/app/", "x": "/app/x", "x/": "/app/x/", "/abs": "/abs", "/": "/", "../up/": "/up/"} {
		if got := b.destPath(in); got != want {
			t.Errorf("destPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCache(t *testing.T) {
	f := newFake()
	df := "FROM base\nENV A=1\nRUN echo hi\nCMD [\"x\"]\n"
	first, _, err := build(t, f, df, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, out, err := build(t, f, df, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || len(f.runs) != 1 || strings.Count(out.text.String(), "Using cache") != 3 {
		t.Errorf("second build: %s (first %s), %d runs, output:\n%s", second.ID, first.ID, len(f.runs), out.text.String())
	}
	// A changed step and those after it run again; NoCache runs all.
	third, _, err := build(t, f, strings.Replace(df, "A=1", "A=2", 1), nil)
	if err != nil || third.ID == first.ID || len(f.runs) != 2 {
		t.Errorf("changed ENV: %s, %d runs, %v", third.ID, len(f.runs), err)
	}
	if _, out, err := build(t, f, df, func(r *Request) { r.NoCache = true }); err != nil || len(f.runs) != 3 || strings.Contains(out.text.String(), "Using cache") {
		t.Errorf("NoCache: %d runs, %v", len(f.runs), err)
	}
}

// A step's container runs no probes; the image keeps its HEALTHCHECK.
func TestStepsNotProbed(t *testing.T) {
	f := newFake()
	img, _, err := build(t, f, "FROM base\nHEALTHCHECK --interval=5s CMD true\nRUN echo hi\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.runHealth) != 1 || !slices.Equal(f.runHealth[0], []string{"NONE"}) {
		t.Errorf("the RUN container's healthcheck: %q", f.runHealth)
	}
	if h := img.Config.Healthcheck; h == nil || !slices.Equal(h.Test, []string{"CMD-SHELL", "true"}) || h.Interval != 5*time.Second {
		t.Errorf("the image's healthcheck: %+v", h)
	}
}

// Each --label is a LABEL step of its own after the last stage's, keys in
// order, with its image's ID after it and the stage's aux after them, as
// Docker's classic builder does.
func TestBuildLabels(t *testing.T) {
	f := newFake()
	img, out, err := build(t, f, "FROM base\nLABEL team=hutch\n", func(r *Request) {
		r.Labels = map[string]string{"z.last": "2", "a.first": "one word"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := img.Config.Labels; len(l) != 3 || l["team"] != "hutch" || l["a.first"] != "one word" || l["z.last"] != "2" {
		t.Errorf("labels = %v", l)
	}
	parent := f.parents[img.ID]
	want := fmt.Sprintf("Step 3/4 : LABEL a.first=one word\n ---> %s\nStep 4/4 : LABEL z.last=2\n ---> %s\n<aux %s>\nSuccessfully built %s\n",
		shortID(parent), shortID(img.ID), img.ID, shortID(img.ID))
	if got := out.text.String(); !strings.Contains(got, want) {
		t.Errorf("output:\n%s\nwant in it:\n%s", got, want)
	}
	if h := f.history[img.ID]; !strings.HasSuffix(h, "#(nop)  LABEL z.last=2") {
		t.Errorf("history of the last step = %q", h)
	}
}
