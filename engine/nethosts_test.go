package engine

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestHostsNames(t *testing.T) {
	for _, tt := range []struct{ hostname, domain, want string }{
		{"4b92a573912d", "", "4b92a573912d"},
		{"c1.invalid", "", "c1.invalid c1"},
		{"web", "example.org", "web.example.org web"},
		{"a.b", "c", "a.b.c a"},
	} {
		if got := hostsNames(tt.hostname, tt.domain); got != tt.want {
			t.Errorf("hostsNames(%q, %q) = %q, want %q", tt.hostname, tt.domain, got, tt.want)
		}
	}
}

// The lines of Docker's TestEtcHostsDisconnect: connect appends, a
// disconnect deletes its network's line wherever it is, and only lines
// that are exactly it.
func TestHostsLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	const start = "127.0.0.1\tlocalhost\n192.0.2.3\totherhost.invalid\n192.168.123.2\tc1.invalid c1\n"
	if err := os.WriteFile(path, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	inode := func() uint64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	ino := inode()
	net1, net2 := netip.MustParseAddr("192.168.123.2"), netip.MustParseAddr("192.168.124.2")
	const names = "c1.invalid c1"
	step := func(what string, fn func() error, want string) {
		t.Helper()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if b, _ := os.ReadFile(path); string(b) != want || inode() != ino {
			t.Errorf("after %s:\n%s\nwant:\n%s(inode %d, was %d)", what, b, want, inode(), ino)
		}
	}
	step("connect net2", func() error { return appendHostsLine(path, net2, names) },
		start+"192.168.124.2\tc1.invalid c1\n")
	step("disconnect net1", func() error { return deleteHostsLine(path, net1, names) },
		"127.0.0.1\tlocalhost\n192.0.2.3\totherhost.invalid\n192.168.124.2\tc1.invalid c1\n")
	step("reconnect net1", func() error { return appendHostsLine(path, net1, names) },
		"127.0.0.1\tlocalhost\n192.0.2.3\totherhost.invalid\n192.168.124.2\tc1.invalid c1\n192.168.123.2\tc1.invalid c1\n")
	step("disconnect net1 again", func() error { return deleteHostsLine(path, net1, names) },
		"127.0.0.1\tlocalhost\n192.0.2.3\totherhost.invalid\n192.168.124.2\tc1.invalid c1\n")
	// Changed by the user: the line is not the container's any more.
	if err := os.WriteFile(path, []byte("# mine\n192.168.124.2\tc1.invalid c1 extra\n192.168.124.2\tother\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("disconnect net2 from an edited file", func() error { return deleteHostsLine(path, net2, names) },
		"# mine\n192.168.124.2\tc1.invalid c1 extra\n192.168.124.2\tother\n")
	// No newline at the end: the appended line is a line of its own.
	if err := os.WriteFile(path, []byte("10.0.0.1\tmine"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("connect after a last line without newline", func() error { return appendHostsLine(path, net1, names) },
		"10.0.0.1\tmine\n192.168.123.2\tc1.invalid c1\n")
	// Gone: nothing made.
	os.Remove(path)
	if err := appendHostsLine(path, net1, names); err != nil {
		t.Errorf("append to a missing file: %v", err)
	}
	if err := deleteHostsLine(path, net1, names); err != nil {
		t.Errorf("delete from a missing file: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a missing hosts file was made")
	}
}

// FuzzDropHostsLines feeds hosts files a container may have written
// anything into: every line is kept byte for byte but the container's
// own, which goes.
func FuzzDropHostsLines(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1\tlocalhost\n172.18.0.2\tabc\n",
		"172.18.0.2\tabc",
		"# 172.18.0.2\tabc\n\n  172.18.0.2 \tabc\n",
		"172.18.0.2\tabc\r\n172.018.0.2\tabc\n::ffff:172.18.0.2\tabc\n",
		"",
	} {
		f.Add([]byte(s), "172.18.0.2", "abc")
	}
	f.Fuzz(func(t *testing.T, b []byte, addr, names string) {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return
		}
		out := dropHostsLines(b, a, names)
		ownLine := func(line string) bool {
			before, ok := strings.CutSuffix(line, "\t"+names)
			p, err := netip.ParseAddr(strings.TrimSpace(before))
			return ok && !strings.HasPrefix(line, "#") && err == nil && p == a
		}
		var want []byte
		for _, line := range bytes.SplitAfter(b, []byte("\n")) {
			if !ownLine(strings.TrimSuffix(string(line), "\n")) {
				want = append(want, line...)
			}
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("dropHostsLines(%q, %s, %q) = %q, want %q", b, a, names, out, want)
		}
		if !bytes.Equal(dropHostsLines(out, a, names), out) {
			t.Fatalf("a second pass changed %q", out)
		}
	})
}
