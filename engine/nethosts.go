package engine

import (
	"bytes"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/hutch-engine/hutch/engine/container"
)

// A container's /etc/hosts has a line for each of its network addresses:
// the address, a tab, its hostname (hostsNames). As Docker's sandbox does
// when an endpoint joins or leaves (libnetwork's addHostsEntries and
// deleteHostsEntries), a connect of a running container appends the line
// of its address on the new network, and a disconnect deletes the lines
// that are exactly the one of the address it had there: a line the user
// changed stays, and so do the others. Unlike resolv.conf, the file is
// changed even after the user edited it (Docker appends all the same).
// The file is changed in place (it is bind-mounted); one a user mount
// replaced is left alone.

// hostsNames is what follows the address on a container's own lines of
// /etc/hosts, as Docker writes it: the hostname with the domain name when
// there is one, and then the first label of that when it has dots.
func hostsNames(hostname, domainname string) string {
	names := hostname
	if domainname != "" {
		names += "." + domainname
	}
	if short, _, ok := strings.Cut(names, "."); ok {
		names += " " + short
	}
	return names
}

// reHosts adds to, and deletes from, the /etc/hosts of targets the lines
// of c's addresses that ch gained or lost.
func (e *Engine) reHosts(c *container.Container, targets []*container.Container, ch netChange) {
	if len(ch.added) == 0 && len(ch.removed) == 0 {
		return
	}
	names := hostsNames(c.Config.Hostname, c.Config.Domainname)
	for _, t := range targets {
		if userMounted(t, "/etc/hosts") {
			continue
		}
		path := filepath.Join(e.etcDir(t), "hosts")
		var err error
		for _, a := range ch.removed {
			if err == nil {
				err = deleteHostsLine(path, a, names)
			}
		}
		for _, a := range ch.added {
			if err == nil {
				err = appendHostsLine(path, a, names)
			}
		}
		if err != nil {
			e.log.Warn("updating /etc/hosts after a network change", "container", t.ID, "err", err)
		}
	}
}

// appendHostsLine appends "addr<tab>names" to the hosts file at path,
// after a newline if the file does not end with one. A file that is gone
// is left so.
func appendHostsLine(path string, addr netip.Addr, names string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	line := addr.String() + "\t" + names + "\n"
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	if _, err := f.WriteString(line); err != nil {
		return err
	}
	return f.Close()
}

// deleteHostsLine deletes the lines of the hosts file at path that are
// addr and names (dropHostsLines), rewriting it in place when it had
// any. A file that is gone is left so.
func deleteHostsLine(path string, addr netip.Addr, names string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	out := dropHostsLines(b, addr, names)
	if len(out) == len(b) {
		return nil
	}
	// Truncated and written, not renamed over: the container's
	// /etc/hosts is a bind mount of this inode.
	return os.WriteFile(path, out, 0o644)
}

// dropHostsLines returns the hosts file b without the lines that are
// addr, a tab and names, as Docker's etchosts.Delete matches them: the
// line ends with a tab and names, and what is before (blanks trimmed)
// parses as addr. Comments and every other line stay as they were
// (Docker also drops blank lines; they stay here).
func dropHostsLines(b []byte, addr netip.Addr, names string) []byte {
	out := make([]byte, 0, len(b))
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		text := strings.TrimSuffix(string(line), "\n")
		if !strings.HasPrefix(text, "#") {
			if before, ok := strings.CutSuffix(text, "\t"+names); ok {
				if a, err := netip.ParseAddr(strings.TrimSpace(before)); err == nil && a == addr {
					continue
				}
			}
		}
		out = append(out, line...)
	}
	return out
}
