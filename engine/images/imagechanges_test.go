package images

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

func TestApplyChanges(t *testing.T) {
	cfgWith := func(f func(c *dockerspec.DockerOCIImageConfig)) dockerspec.DockerOCIImageConfig {
		var c dockerspec.DockerOCIImageConfig
		f(&c)
		return c
	}
	tests := []struct {
		name    string
		base    func(c *dockerspec.DockerOCIImageConfig)
		changes []string
		want    dockerspec.DockerOCIImageConfig
	}{
		{"cmd exec form", nil, []string{`CMD ["/bin/echo", "hi"]`},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.Cmd = []string{"/bin/echo", "hi"} })},
		{"cmd shell form", nil, []string{"cmd echo $HOME"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.Cmd = []string{"/bin/sh", "-c", "echo $HOME"} })},
		{"entrypoint drops the base cmd", func(c *dockerspec.DockerOCIImageConfig) { c.Cmd = []string{"sh"} }, []string{`ENTRYPOINT ["/init"]`},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.Entrypoint = []string{"/init"} })},
		{"cmd then entrypoint keeps the cmd", nil, []string{`CMD ["a"]`, `ENTRYPOINT ["/init"]`},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.Cmd, c.Entrypoint = []string{"a"}, []string{"/init"} })},
		{"env forms and replacement", func(c *dockerspec.DockerOCIImageConfig) { c.Env = []string{"A=old", "PATH=/bin"} },
			[]string{`ENV A=new B="two words" C=x\ y`, "ENV D legacy value here"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.Env = []string{"A=new", "PATH=/bin", "B=two words", "C=x y", "D=legacy value here"}
			})},
		{"labels", nil, []string{`LABEL a=1 "b c"='d e'`},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.Labels = map[string]string{"a": "1", "b c": "d e"} })},
		{"expose", nil, []string{"EXPOSE 80 53/udp 8000-8001"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.ExposedPorts = map[string]struct{}{"80/tcp": {}, "53/udp": {}, "8000/tcp": {}, "8001/tcp": {}}
			})},
		{"user workdir stopsignal", func(c *dockerspec.DockerOCIImageConfig) { c.WorkingDir = "/srv" },
			[]string{"USER app:app", "WORKDIR data", "STOPSIGNAL SIGINT"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.User, c.WorkingDir, c.StopSignal = "app:app", "/srv/data", "SIGINT"
			})},
		{"volumes", nil, []string{`VOLUME ["/data", "/logs"]`, "VOLUME /cache"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.Volumes = map[string]struct{}{"/data": {}, "/logs": {}, "/cache": {}}
			})},
		{"onbuild", nil, []string{"ONBUILD run make"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.OnBuild = []string{"RUN make"} })},
		{"healthcheck", nil, []string{"HEALTHCHECK --interval=5s --retries=3 CMD curl -f http://localhost/"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.Healthcheck = &dockerspec.HealthcheckConfig{Test: []string{"CMD-SHELL", "curl -f http://localhost/"}, Interval: 5 * time.Second, Retries: 3}
			})},
		{"healthcheck none", nil, []string{"HEALTHCHECK NONE"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.Healthcheck = &dockerspec.HealthcheckConfig{Test: []string{"NONE"}}
			})},
		{"several lines, comments and blanks", nil, []string{"# note\nUSER a\n\n", "  "},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) { c.User = "a" })},
		{"variables expanded as the builder does", func(c *dockerspec.DockerOCIImageConfig) {
			c.Env = []string{"PATH=/bin", "APP=web", "PORTS=80 443", "SIG=SIGINT"}
		},
			[]string{"ENV PATH=/x:$PATH HOME=/home/$APP", `ENV QUOTED="$APP and \$APP" SINGLE='$APP'`, "ENV LEGACY ${APP}-v1",
				"LABEL app=$APP", "EXPOSE $PORTS", "USER ${APP}", "WORKDIR /srv/$APP", "VOLUME /data/$APP", `VOLUME ["/logs/$APP"]`,
				"STOPSIGNAL $SIG", "CMD echo $APP", "ENV NEXT=${HOME}/bin"},
			cfgWith(func(c *dockerspec.DockerOCIImageConfig) {
				c.Env = []string{"PATH=/x:/bin", "APP=web", "PORTS=80 443", "SIG=SIGINT", "HOME=/home/web", "QUOTED=web and $APP", "SINGLE=$APP",
					"LEGACY=web-v1", "NEXT=/home/web/bin"}
				c.Labels = map[string]string{"app": "web"}
				c.ExposedPorts = map[string]struct{}{"80/tcp": {}, "443/tcp": {}}
				c.User, c.WorkingDir, c.StopSignal = "web", "/srv/web", "SIGINT"
				c.Volumes = map[string]struct{}{"/data/web": {}, "/logs/web": {}}
				c.Cmd = []string{"/bin/sh", "-c", "echo $APP"}
			})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got dockerspec.DockerOCIImageConfig
			if tc.base != nil {
				tc.base(&got)
			}
			if err := ApplyChanges(&got, tc.changes); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestApplyChangesErrors(t *testing.T) {
	tests := []struct{ change, msg string }{
		{"RUN rm -rf /", "run is not a valid change command"},
		{"FROM scratch", "from is not a valid change command"},
		{"CMD", "CMD: requires at least one argument"},
		{"ENV", "ENV: requires at least one argument"},
		{"ENV A", "ENV: must have two arguments"},
		{"ENV A=1 B", "can't find = in \"B\""},
		{"ENV =x", "ENV: names can not be blank"},
		{`LABEL "a=b`, "unmatched quote"},
		{"EXPOSE 70000", "invalid port"},
		{"EXPOSE 80/icmp", "invalid proto"},
		{"EXPOSE 90-80", "invalid range"},
		{"USER", "requires exactly one argument"},
		{"STOPSIGNAL 99", "invalid signal"},
		{"STOPSIGNAL $UNSET", "requires exactly one argument"},
		{"ENV $UNSET=x", "names can not be blank"},
		{`ENV A=${B`, "failed to process"},
		{"ONBUILD ONBUILD RUN x", "isn't allowed"},
		{"ONBUILD FROM x", "FROM isn't allowed as an ONBUILD trigger"},
		{"HEALTHCHECK --interval=1ns CMD x", "invalid duration"},
		{"HEALTHCHECK --bogus=1s CMD x", "unknown flag"},
		{"HEALTHCHECK CMD", "missing command"},
		{"HEALTHCHECK SOMETIMES", "want CMD or NONE"},
	}
	for _, tc := range tests {
		t.Run(tc.change, func(t *testing.T) {
			var cfg dockerspec.DockerOCIImageConfig
			err := ApplyChanges(&cfg, []string{tc.change})
			if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want invalid argument with %q", err, tc.msg)
			}
		})
	}
}

// FuzzApplyChanges feeds the parser what a client may send as "changes":
// it must never panic, and what it accepts must be a config Docker's JSON
// can carry (every Env entry a KEY=value with a key).
func FuzzApplyChanges(f *testing.F) {
	for _, s := range []string{`CMD ["a"]`, "ENV A=1 B=\"x y\"", "LABEL a b c", "EXPOSE 1-3/udp", "HEALTHCHECK --retries=1 CMD [\"x\"]",
		"WORKDIR ../..", "ONBUILD run x", `VOLUME ["/a"]`, "ENV a\\", "LABEL 'x", "EXPOSE -", "\tUSER\tx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, change string) {
		var cfg dockerspec.DockerOCIImageConfig
		err := ApplyChanges(&cfg, []string{change})
		if err != nil {
			if !errdefs.IsInvalidArgument(err) {
				t.Fatalf("error of another class: %v", err)
			}
			return
		}
		for _, e := range cfg.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				t.Fatalf("Env entry %q from %q", e, change)
			}
		}
		if cfg.WorkingDir != "" && !strings.HasPrefix(cfg.WorkingDir, "/") {
			t.Fatalf("relative WorkingDir %q", cfg.WorkingDir)
		}
		if _, err := json.Marshal(cfg); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzRawWords(f *testing.F) {
	for _, s := range []string{`a "b c" 'd e' f\ g`, `"unterminated`, `\`, `'\'"`, `a="$B c" 'x\'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := rawWords(s)
		if err != nil {
			return
		}
		// The words are s's characters without the white space between
		// them: joined with one space they split into the same words.
		again, err := rawWords(strings.Join(words, " "))
		if err != nil || !reflect.DeepEqual(again, words) {
			t.Fatalf("%q: words %q, joined and split %q, %v", s, words, again, err)
		}
		for _, w := range words {
			if w == "" || !strings.Contains(s, w) {
				t.Fatalf("%q: word %q", s, w)
			}
		}
	})
}
