package main

import (
	"reflect"
	"strings"
	"testing"
)

const sample = `=== RUN   TestA
--- PASS: TestA (0.01s)
=== RUN   TestB
=== RUN   TestB/one
    b_test.go:10: assertion failed
=== RUN   TestB/two
--- FAIL: TestB (0.02s)
    --- FAIL: TestB/one (0.01s)
    --- PASS: TestB/two (0.01s)
=== RUN   TestC
    c_test.go:3: skipped: needs its own daemon
--- SKIP: TestC (0.00s)
=== RUN   TestD
    d_test.go:5: boom
--- FAIL: TestD (0.00s)
FAIL
`

func TestParseVerbose(t *testing.T) {
	res, err := ParseVerbose(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{"TestA": Pass, "TestB": Fail, "TestB/one": Fail, "TestB/two": Pass, "TestC": Skip, "TestD": Fail}
	if !reflect.DeepEqual(res.Tests, want) {
		t.Fatalf("tests %v", res.Tests)
	}
	if got := res.Output["TestB/one"]; len(got) != 1 || !strings.Contains(got[0], "assertion failed") {
		t.Fatalf("output of TestB/one: %q", got)
	}
}

func TestJudge(t *testing.T) {
	res, _ := ParseVerbose(strings.NewReader(sample))
	tests := []struct {
		name  string
		known map[string]string
		want  Verdict
	}{
		{"nothing listed", nil, Verdict{Unlisted: []string{"TestB/one", "TestD"}}},
		{"subtest listed", map[string]string{"TestB/one": "x"}, Verdict{Unlisted: []string{"TestD"}, Listed: []string{"TestB/one"}}},
		{"parent covers subtests", map[string]string{"TestB": "x", "TestD": "y"}, Verdict{Listed: []string{"TestB/one", "TestD"}}},
		{"passing entries are stale", map[string]string{"TestA": "x", "TestB/two": "y", "TestC": "z", "TestE": "gone", "TestB/one": "x", "TestD": "y"},
			Verdict{Listed: []string{"TestB/one", "TestD"}, Stale: []string{"TestA", "TestB/two", "TestC", "TestE"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(res, tt.known)
			tt.want.Passed, tt.want.Failed, tt.want.Skipped = 2, 3, 1
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseKnown(t *testing.T) {
	k, err := ParseKnown(strings.NewReader("# comment\n\ncontainer TestKill needs its own dockerd\nnetwork/bridge TestX/sub host: no iptables\n"))
	if err != nil {
		t.Fatal(err)
	}
	if k["container"]["TestKill"] != "needs its own dockerd" || k["network/bridge"]["TestX/sub"] != "host: no iptables" {
		t.Fatalf("%v", k)
	}
	for _, bad := range []string{"container TestKill\n", "a T r\na T r\n"} {
		if _, err := ParseKnown(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
