package preflight

import (
	"io/fs"
	"strings"
	"testing"
)

func TestParseSubIDs(t *testing.T) {
	data := "# comment\n\n  alice:100000:65536  \n1000:200000:10\nbob:x:5\ncarol:1:0\nbroken line\nd:1:2:3\n"
	lines, bad := parseSubIDs(data)
	type got struct {
		n      int
		owner  string
		r      idRange
		hasErr bool
	}
	want := []got{
		{3, "alice", idRange{100000, 65536}, false},
		{4, "1000", idRange{200000, 10}, false},
		{5, "bob", idRange{}, true},
		{6, "carol", idRange{}, true},
	}
	if len(lines) != len(want) {
		t.Fatalf("parseSubIDs: %d lines, want %d: %+v", len(lines), len(want), lines)
	}
	for i, l := range lines {
		g := got{l.n, l.owner, l.r, l.numErr != nil}
		if g != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, g, want[i])
		}
	}
	if len(bad) != 2 || bad[0].n != 7 || bad[0].text != "broken line" || bad[1].n != 8 {
		t.Errorf("bad lines = %+v, want lines 7 and 8", bad)
	}
}

func TestFreeStart(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  uint64
	}{
		{"empty", []string{"", ""}, 100000},
		{"below minimum", []string{"a:1000:10", ""}, 100000},
		{"after the last of both files", []string{"a:100000:65536", "a:100000:65536\nb:165536:65536"}, 231072},
		{"ignores broken lines", []string{"a:x:y\nb:1:2:3", ""}, 100000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all [][]subIDLine
			for _, f := range tt.files {
				l, _ := parseSubIDs(f)
				all = append(all, l)
			}
			if got := freeStart(all...); got != tt.want {
				t.Errorf("freeStart = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSubIDItem(t *testing.T) {
	const uid = 1000
	tests := []struct {
		name    string
		kind    string
		data    string
		readErr error
		user    string
		self    int
		status  Status
		detail  string // substring
		fix     string // exact, "" for none
	}{
		{"by name", "subuid", "bob:1:65536\nalice:100000:65536\n", nil, "alice", uid, OK,
			"alice (uid 1000): 100000-165535 (65536 ids)", ""},
		{"by numeric uid", "subgid", "1000:100000:65536\n", nil, "alice", uid, OK,
			"100000-165535 (65536 ids)", ""},
		{"numeric uid, no user name", "subuid", "1000:100000:65536\n", nil, "", uid, OK,
			"uid 1000: 100000-165535", ""},
		{"ranges add up", "subuid", "alice:100000:32768\n1000:300000:32768\n", nil, "alice", uid, OK,
			"100000-132767, 300000-332767 (65536 ids)", ""},
		{"own id inside a range does not count", "subuid", "alice:1000:65536\n", nil, "alice", uid, Warning,
			"(65535 ids), fewer than 65536", "run as root: usermod --add-subuids 100000-165535 alice"},
		{"too few", "subgid", "alice:100000:1000\n", nil, "alice", uid, Warning,
			"(1000 ids), fewer than 65536", "run as root: usermod --add-subgids 100000-165535 alice"},
		{"no line for the user", "subuid", "# nothing\nbob:100000:65536\n", nil, "alice", uid, Missing,
			"no range for alice (uid 1000) in /etc/subuid: hutch falls back to single-UID mode", "run as root: usermod --add-subuids 100000-165535 alice"},
		{"no file", "subgid", "", fs.ErrNotExist, "alice", uid, Missing,
			"in /etc/subgid, which does not exist", "run as root: usermod --add-subgids 100000-165535 alice"},
		{"unreadable file", "subuid", "", fs.ErrPermission, "alice", uid, Missing,
			"cannot read /etc/subuid", "run as root: chmod 644 /etc/subuid"},
		{"no user name", "subuid", "", nil, "", uid, Missing,
			"no range for uid 1000", "run as root: echo 1000:100000:65536 >> /etc/subuid"},
		{"malformed line of another user", "subuid", "alice:100000:65536\nbob:1\n", nil, "alice", uid, Missing,
			`line 2 of /etc/subuid ("bob:1") does not have three fields`, "run as root: correct or delete line 2 of /etc/subuid"},
		{"own line not numeric", "subuid", "alice:100000:lots\n", nil, "alice", uid, Missing,
			"line 1 of /etc/subuid for alice (uid 1000) is not owner:start:count", "run as root: correct or delete line 1 of /etc/subuid"},
		{"other's line not numeric is ignored", "subuid", "bob:x:y\nalice:100000:65536\n", nil, "alice", uid, OK,
			"(65536 ids)", ""},
		{"overlapping ranges", "subuid", "alice:100000:65536\n1000:150000:65536\n", nil, "alice", uid, Missing,
			"ranges 100000-165535 and 150000-215535 for alice (uid 1000) in /etc/subuid overlap", "run as root: delete one of the overlapping lines of /etc/subuid for alice (uid 1000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := subIDFile{kind: tt.kind, path: "/etc/" + tt.kind, data: tt.data, readErr: tt.readErr, self: tt.self}
			it := subIDItem(f, uid, tt.user, firstSubID)
			if it.Status != tt.status || !strings.Contains(it.Detail, tt.detail) || it.Fix != tt.fix {
				t.Errorf("subIDItem =\n  %v %q fix %q\nwant\n  %v containing %q fix %q", it.Status, it.Detail, it.Fix, tt.status, tt.detail, tt.fix)
			}
			if it.Check != CheckSubID || it.Name != tt.kind+" range" {
				t.Errorf("item is %q %q", it.Check, it.Name)
			}
		})
	}
}

func TestUsableIDs(t *testing.T) {
	tests := []struct {
		ranges []idRange
		self   uint64
		want   uint64
	}{
		{nil, 5, 0},
		{[]idRange{{100, 10}}, 5, 10},
		{[]idRange{{100, 10}}, 100, 9},
		{[]idRange{{100, 10}}, 109, 9},
		{[]idRange{{100, 10}}, 110, 10},
		{[]idRange{{100, 10}, {200, 5}}, 202, 14},
	}
	for _, tt := range tests {
		if got := usableIDs(tt.ranges, tt.self); got != tt.want {
			t.Errorf("usableIDs(%v, %d) = %d, want %d", tt.ranges, tt.self, got, tt.want)
		}
	}
}

func FuzzParseSubIDs(f *testing.F) {
	f.Add("# c\nalice:100000:65536\n1000:1:2\nbad\n")
	f.Add("a:4294967295:1\nb:-1:5\n::\n")
	f.Fuzz(func(t *testing.T, data string) {
		lines, bad := parseSubIDs(data)
		last := 0
		for _, l := range lines {
			if l.n <= last {
				t.Fatalf("line numbers not increasing: %d after %d", l.n, last)
			}
			last = l.n
			if l.numErr == nil && (l.r.count == 0 || l.r.end() > 1<<33) {
				t.Fatalf("line %d: range %+v accepted", l.n, l.r)
			}
		}
		for _, b := range bad {
			if strings.Count(b.text, ":") == 2 {
				t.Fatalf("line %d %q has three fields but was rejected", b.n, b.text)
			}
		}
		_ = freeStart(lines)
		f := subIDFile{kind: "subuid", path: "/etc/subuid", data: data}
		if it := subIDItem(f, 1000, "alice", freeStart(lines)); it.Status != OK && it.Fix == "" {
			t.Fatalf("%v without a fix: %s", it.Status, it.Detail)
		}
	})
}
