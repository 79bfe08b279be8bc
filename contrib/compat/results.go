package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Outcome is what one test (or subtest) of a package came to.
type Outcome string

const (
	Pass Outcome = "PASS"
	Fail Outcome = "FAIL"
	Skip Outcome = "SKIP"
)

// Results are the outcomes of one package's run, by test name as `go test
// -v` prints it ("TestCreate/empty_name").
type Results struct {
	Tests map[string]Outcome
	// Output holds each test's own lines, for the report of a failure.
	Output map[string][]string
}

var (
	resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)
	runLine    = regexp.MustCompile(`^=== (RUN|CONT|PAUSE|NAME)\s+(\S+)`)
)

// ParseVerbose reads `go test -v` output. Lines between a test's "=== RUN"
// (or CONT) and the next such marker are that test's output.
func ParseVerbose(r io.Reader) (*Results, error) {
	res := &Results{Tests: map[string]Outcome{}, Output: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	current := ""
	for sc.Scan() {
		line := sc.Text()
		if m := runLine.FindStringSubmatch(line); m != nil {
			current = m[2]
			continue
		}
		if m := resultLine.FindStringSubmatch(line); m != nil {
			res.Tests[m[2]] = Outcome(m[1])
			current = m[2]
			continue
		}
		if current != "" && len(res.Output[current]) < 200 {
			res.Output[current] = append(res.Output[current], line)
		}
	}
	return res, sc.Err()
}

// Known is the checked-in list of tests hutch does not pass: package, test
// (a subtest's full name, or a parent standing for all of its subtests) and
// the reason.
type Known map[string]map[string]string // package → test → reason

// ParseKnown reads the list: one "package test reason…" per line, '#'
// comments and blank lines ignored. A line without a reason is an error:
// every entry says why.
func ParseKnown(r io.Reader) (Known, error) {
	k := Known{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want \"package test reason\", got %q", n, line)
		}
		if k[f[0]] == nil {
			k[f[0]] = map[string]string{}
		}
		if _, dup := k[f[0]][f[1]]; dup {
			return nil, fmt.Errorf("line %d: %s %s listed twice", n, f[0], f[1])
		}
		k[f[0]][f[1]] = strings.Join(f[2:], " ")
	}
	return k, sc.Err()
}

// Verdict compares one package's results with the list.
type Verdict struct {
	Passed, Failed, Skipped int
	// Unlisted are failing tests that no entry covers: the run fails.
	Unlisted []string
	// Listed are failing tests that an entry covers.
	Listed []string
	// Stale are entries whose tests passed or did not fail: remove them.
	Stale []string
}

// Judge counts the package's tests and sorts its failures. A failure
// counts where it happened: a test failing only because a subtest failed is
// covered when that subtest is (or the parent is) listed. An entry is stale
// when nothing it covers failed.
func Judge(res *Results, known map[string]string) Verdict {
	var v Verdict
	failed := map[string]bool{}
	for name, o := range res.Tests {
		switch o {
		case Pass:
			v.Passed++
		case Skip:
			v.Skipped++
		case Fail:
			v.Failed++
			failed[name] = true
		}
	}
	covered := map[string]bool{} // entries that cover a failure
	for name := range failed {
		if hasFailedChild(name, failed) {
			continue
		}
		entry, ok := coveringEntry(name, known)
		if !ok {
			v.Unlisted = append(v.Unlisted, name)
			continue
		}
		covered[entry] = true
		v.Listed = append(v.Listed, name)
	}
	for entry := range known {
		if !covered[entry] {
			v.Stale = append(v.Stale, entry)
		}
	}
	sort.Strings(v.Unlisted)
	sort.Strings(v.Listed)
	sort.Strings(v.Stale)
	return v
}

func hasFailedChild(name string, failed map[string]bool) bool {
	for other := range failed {
		if strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

// coveringEntry finds the entry for name or for its nearest parent.
func coveringEntry(name string, known map[string]string) (string, bool) {
	for n := name; ; {
		if _, ok := known[n]; ok {
			return n, true
		}
		i := strings.LastIndex(n, "/")
		if i < 0 {
			return "", false
		}
		n = n[:i]
	}
}
