//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// The classic builder's stream and events as Docker Engine 29's (moby's
// integration/build TestBuildEmitsEvents and readBuildImageIDs), through
// the Go SDK.

// classicBuild runs a classic build of dockerfile and returns its stream:
// the text, the aux IDs in order, and where in the text each came.
func classicBuild(t *testing.T, c *client.Client, dockerfile string, opts client.ImageBuildOptions) (text string, ids []string, at []int) {
	t.Helper()
	opts.Version = build.BuilderV1
	res, err := c.ImageBuild(context.Background(), contextTar(t, map[string]string{"Dockerfile": dockerfile}), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var sb strings.Builder
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			Stream string
			Error  string `json:"error"`
			Aux    *struct{ ID string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			return sb.String(), ids, at
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			t.Fatalf("build failed: %s\n%s", m.Error, sb.String())
		}
		sb.WriteString(m.Stream)
		if m.Aux != nil {
			ids, at = append(ids, m.Aux.ID), append(at, sb.Len())
		}
	}
}

// TestCompatBuildStageIDs: the classic builder ends every stage with the
// stage's image ID as aux, before the next stage's FROM; the last one is
// the image built, before "Successfully built".
func TestCompatBuildStageIDs(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	df := "FROM " + ref + " AS one\nRUN echo one > /one\nFROM one AS two\nRUN echo two > /two\nFROM " + ref + "\nCOPY --from=two /two /two\n"
	text, ids, at := classicBuild(t, c, df, client.ImageBuildOptions{Tags: []string{"staged:1"}, Remove: true})
	built := must(t, d, "image", "inspect", "--format", "{{.Id}}", "staged:1")
	if len(ids) != 3 || ids[2] != built || ids[0] == ids[1] || ids[1] == ids[2] {
		t.Fatalf("aux IDs %q, image built %s\n%s", ids, built, text)
	}
	from2 := strings.Index(text, "Step 3/6 : FROM one AS two")
	from3 := strings.Index(text, "Step 5/6 : FROM "+ref)
	done := strings.Index(text, "Successfully built")
	if !(at[0] <= from2 && from2 < at[1] && at[1] <= from3 && from3 < at[2] && at[2] <= done) {
		t.Errorf("aux IDs at %v, stage two at %d, stage three at %d, end at %d:\n%s", at, from2, from3, done, text)
	}
	// The stages' images are the images of their last steps.
	if got := must(t, d, "run", "--rm", ids[1], "cat", "/one", "/two"); got != "one\ntwo" {
		t.Errorf("stage two's image holds %q", got)
	}

	// A quiet build sends the image's ID as its one line, no aux.
	text, ids, _ = classicBuild(t, c, df, client.ImageBuildOptions{SuppressOutput: true})
	if len(ids) != 0 || text != built+"\n" {
		t.Errorf("quiet build: aux %q, output %q", ids, text)
	}
}

// daemonUnixTime is the daemon's clock as the events API takes it.
func daemonUnixTime(t *testing.T, c *client.Client) string {
	t.Helper()
	info, err := c.Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dt, err := time.Parse(time.RFC3339Nano, info.Info.SystemTime)
	if err != nil {
		t.Fatalf("SystemTime %q: %v", info.Info.SystemTime, err)
	}
	return fmt.Sprintf("%d.%09d", dt.Unix(), dt.Nanosecond())
}

// TestCompatBuildEmitsEvents: a build, by either builder, tells of the
// image it makes with one image create event, and of its tag with a tag
// event, as Docker does.
func TestCompatBuildEmitsEvents(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	for _, builder := range []build.BuilderVersion{build.BuilderV1, build.BuilderBuildKit} {
		for _, tc := range []struct {
			name, tag, tagEvent string
		}{
			{"no tag", "", ""},
			{"with tag", "testbuildemitsevents" + string(builder), "testbuildemitsevents" + string(builder) + ":latest"},
		} {
			t.Run("v"+string(builder)+"/"+tc.name, func(t *testing.T) {
				since := daemonUnixTime(t, c)
				opts := client.ImageBuildOptions{NoCache: true, Version: builder}
				if tc.tag != "" {
					opts.Tags = []string{tc.tag}
				}
				id := builtImageID(t, c, "FROM "+ref+"\nRUN echo hello > /hello\n", opts)
				until := daemonUnixTime(t, c)
				res := c.Events(context.Background(), client.EventsListOptions{Since: since, Until: until, Filters: make(client.Filters).Add("image", id)})
				var creates, tags int
				var tagName string
				var seen []string
			read:
				for {
					select {
					case m := <-res.Messages:
						seen = append(seen, fmt.Sprintf("%s %s %s", m.Type, m.Action, m.Actor.ID))
						if m.Type == events.ImageEventType && m.Action == events.ActionCreate {
							creates++
						}
						if m.Type == events.ImageEventType && m.Action == events.ActionTag {
							tags++
							tagName = m.Actor.Attributes["name"]
						}
					case err := <-res.Err:
						if err != nil && err != io.EOF {
							t.Fatal(err)
						}
						break read
					}
				}
				wantTags := 0
				if tc.tagEvent != "" {
					wantTags = 1
				}
				if creates != 1 || tags != wantTags || tagName != tc.tagEvent {
					t.Errorf("create events %d, tag events %d (%q); events of %s:\n%s", creates, tags, tagName, id, strings.Join(seen, "\n"))
				}
			})
		}
	}
}

// builtImageID builds dockerfile with the builder opts name and returns
// the ID the build reports last: the classic builder's last aux ID, or
// BuildKit's moby.image.id.
func builtImageID(t *testing.T, c *client.Client, dockerfile string, opts client.ImageBuildOptions) string {
	t.Helper()
	res, err := c.ImageBuild(context.Background(), contextTar(t, map[string]string{"Dockerfile": dockerfile}), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	id := ""
	dec := json.NewDecoder(res.Body)
	for {
		var m struct {
			ID    string          `json:"id"`
			Error string          `json:"error"`
			Aux   json.RawMessage `json:"aux"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			t.Fatalf("build failed: %s", m.Error)
		}
		var aux struct{ ID string }
		if len(m.Aux) > 0 && m.Aux[0] == '{' && json.Unmarshal(m.Aux, &aux) == nil && aux.ID != "" {
			id = aux.ID
		}
	}
	if id == "" {
		t.Fatal("the build reported no image ID")
	}
	return id
}
