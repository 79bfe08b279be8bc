package container

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/containerd/errdefs"
)

func TestParseFilters(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Filters
		bad  bool
	}{
		{"empty", "", Filters{}, false},
		{"current", `{"label":{"a=b":true,"c":true},"status":{"exited":true}}`,
			Filters{"label": {"a=b": true, "c": true}, "status": {"exited": true}}, false},
		{"legacy lists", `{"label":["a=b","c"]}`, Filters{"label": {"a=b": true, "c": true}}, false},
		{"false counts as present", `{"name":{"web":false}}`, Filters{"name": {"web": true}}, false},
		{"null", `null`, Filters{}, false},
		{"null values", `{"label":null}`, Filters{"label": {}}, false},
		{"not json", `label=a`, nil, true},
		{"array", `["label"]`, nil, true},
		{"wrong value type", `{"label":"a"}`, nil, true},
		{"mixed forms", `{"a":{"x":true},"b":["y"]}`, nil, true},
		{"truncated", `{"label":{"a":true}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFilters(tt.in)
			if tt.bad {
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		f    Filters
		want string
	}{
		{"unknown key", Filters{}.Add("colour", "red"), "invalid filter 'colour'"},
		{"exited not a number", Filters{}.Add("exited", "x"), `invalid filter 'exited=x': strconv.Atoi: parsing "x": invalid syntax`},
		{"bad status", Filters{}.Add("status", "sleeping"),
			"invalid filter 'status=sleeping': invalid value for state (sleeping): must be one of created, running, paused, restarting, removing, exited, dead"},
		{"bad health", Filters{}.Add("health", "meh"),
			"invalid filter 'health=meh': invalid value for health (meh): must be one of none, starting, healthy, unhealthy"},
		{"bad is-task", Filters{}.Add("is-task", "maybe"), "invalid filter 'is-task=[maybe]'"},
		{"publish with host", Filters{}.Add("publish", "127.0.0.1:80"), "filter for 'publish' should not contain ':': 127.0.0.1:80"},
		{"bad expose", Filters{}.Add("expose", "http"), `error while looking up for expose http: invalid start port 'http': invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compile(tt.f)
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("err = %v, want invalid argument", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("message %q, want %q", err, tt.want)
			}
		})
	}
}

func FuzzParseFilters(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"label":{"a=b":true}}`, `{"label":["a=b"]}`,
		`{"status":{"exited":true},"exited":{"0":true}}`, `{"name":{"^/web$":true}}`,
		`{"publish":{"1-65535/udp":true}}`, `{"before":{"x":true}}`, `[`, `{"a":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseFilters(in)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("error %v is not invalid argument", err)
			}
			return
		}
		// What parsed re-encodes to the same filters.
		data, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseFilters(string(data))
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("round trip of %q: %v, %v", in, again, err)
		}
		// Compiling and matching arbitrary filters fails cleanly or works.
		lf, err := compile(got)
		if err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("compile error %v is not invalid argument", err)
			}
			return
		}
		lf.match(sampleContainer(), nil)
	})
}

func TestMatchLabels(t *testing.T) {
	labels := map[string]string{"app": "web", "tier": ""}
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, true},
		{[]string{"app"}, true},
		{[]string{"app=web"}, true},
		{[]string{"app=db"}, false},
		{[]string{"app=web", "tier"}, true},
		{[]string{"app=web", "zone"}, false},
		{[]string{"tier="}, true},
	} {
		if got := MatchLabels(tc.values, labels); got != tc.want {
			t.Errorf("MatchLabels(%q) = %v", tc.values, got)
		}
	}
}

// Docker's prunes keep what "label!" matches in full: one value of
// several that does not hold lets the object go.
func TestPruneLabels(t *testing.T) {
	labels := map[string]string{"app": "web", "keep": "yes"}
	for _, tc := range []struct {
		label, not []string
		want       bool
	}{
		{nil, nil, true},
		{[]string{"app=web"}, nil, true},
		{[]string{"app=db"}, nil, false},
		{nil, []string{"keep"}, false},
		{nil, []string{"keep", "other"}, true},
		{nil, []string{"keep=no"}, true},
		{[]string{"app"}, []string{"keep=yes", "app=web"}, false},
	} {
		f := Filters{}.Add("label", tc.label...).Add("label!", tc.not...)
		if got := PruneLabels(f, labels); got != tc.want {
			t.Errorf("PruneLabels(label=%q, label!=%q) = %v, want %v", tc.label, tc.not, got, tc.want)
		}
	}
}
