package preflight

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// minSubIDs is what useradd gives a user by default, and what images need:
// nobody is 65534.
const minSubIDs = 65536

// firstSubID is useradd's SUB_UID_MIN: suggested ranges start there or after
// every existing range.
const firstSubID = 100000

// idRange is a run of host ids from a sub-id file.
type idRange struct{ start, count uint64 }

func (r idRange) end() uint64 { return r.start + r.count }

func (r idRange) String() string { return fmt.Sprintf("%d-%d", r.start, r.end()-1) }

// subIDLine is a line of /etc/subuid or /etc/subgid with three fields.
// rootlesskit's static source reads the whole file and fails on any line
// with another number of fields, so those come back as badLines instead.
type subIDLine struct {
	n      int // line number, from 1
	owner  string
	r      idRange
	numErr error // start or count is not a number, or count is 0
}

type badLine struct {
	n    int
	text string
}

// parseSubIDs splits a sub-id file into its lines, skipping blanks and
// comments the way rootlesskit does.
func parseSubIDs(data string) (lines []subIDLine, bad []badLine) {
	for i, text := range strings.Split(data, "\n") {
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Split(text, ":")
		if len(f) != 3 {
			bad = append(bad, badLine{n: i + 1, text: text})
			continue
		}
		l := subIDLine{n: i + 1, owner: f[0]}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		switch {
		case err1 != nil || err2 != nil:
			l.numErr = errors.Join(err1, err2)
		case count == 0:
			l.numErr = errors.New("count is 0")
		default:
			l.r = idRange{start: start, count: count}
		}
		lines = append(lines, l)
	}
	return lines, bad
}

// ownLines returns the lines of a user, who is matched by name or by the
// uid written as a number (both files are keyed by the user, never by gid).
func ownLines(lines []subIDLine, uid int, name string) []subIDLine {
	uidS := strconv.Itoa(uid)
	var own []subIDLine
	for _, l := range lines {
		if l.owner == uidS || (name != "" && l.owner == name) {
			own = append(own, l)
		}
	}
	return own
}

// usableIDs counts the ids rootlesskit maps from ranges: the caller's own id
// is already mapped to 0 and newuidmap refuses to map it twice.
func usableIDs(ranges []idRange, self uint64) uint64 {
	var n uint64
	for _, r := range ranges {
		n += r.count
		if self >= r.start && self < r.end() {
			n--
		}
	}
	return n
}

// overlap returns two ranges that overlap, which the kernel refuses in one
// id map.
func overlap(ranges []idRange) (a, b idRange, found bool) {
	s := slices.Clone(ranges)
	slices.SortFunc(s, func(x, y idRange) int { return cmp.Compare(x.start, y.start) })
	for i := 1; i < len(s); i++ {
		if s[i].start < s[i-1].end() {
			return s[i-1], s[i], true
		}
	}
	return idRange{}, idRange{}, false
}

// freeStart is the first id after every range of every user, and at least
// firstSubID, so a suggested range collides with nobody's.
func freeStart(files ...[]subIDLine) uint64 {
	start := uint64(firstSubID)
	for _, lines := range files {
		for _, l := range lines {
			if l.numErr == nil && l.r.end() > start {
				start = l.r.end()
			}
		}
	}
	return start
}

// subIDFile is one sub-id file as read for a user.
type subIDFile struct {
	kind    string // "subuid" or "subgid"
	path    string
	data    string
	readErr error // fs.ErrNotExist counts as an empty file
	self    int   // the caller's uid or gid, which rootlesskit skips
}

// subIDItem judges a user's ranges in one file; free is where a new range
// should start.
func subIDItem(f subIDFile, uid int, name string, free uint64) Item {
	it := Item{Check: CheckSubID, Name: f.kind + " range", Status: Missing}
	who := name
	if who == "" {
		who = "uid " + strconv.Itoa(uid)
	} else {
		who = fmt.Sprintf("%s (uid %d)", name, uid)
	}
	if f.readErr != nil && !errors.Is(f.readErr, fs.ErrNotExist) {
		it.Detail = fmt.Sprintf("cannot read %s: %v: hutch falls back to single-UID mode", f.path, f.readErr)
		it.Fix = "run as root: chmod 644 " + f.path
		return it
	}
	lines, bad := parseSubIDs(f.data)
	if len(bad) > 0 {
		it.Detail = fmt.Sprintf("line %d of %s (%q) does not have three fields, and rootlesskit rejects the whole file: hutch falls back to single-UID mode",
			bad[0].n, f.path, bad[0].text)
		it.Fix = fmt.Sprintf("run as root: correct or delete line %d of %s", bad[0].n, f.path)
		return it
	}
	own := ownLines(lines, uid, name)
	var ranges []idRange
	for _, l := range own {
		if l.numErr != nil {
			it.Detail = fmt.Sprintf("line %d of %s for %s is not owner:start:count with numbers (%v): hutch falls back to single-UID mode",
				l.n, f.path, who, l.numErr)
			it.Fix = fmt.Sprintf("run as root: correct or delete line %d of %s", l.n, f.path)
			return it
		}
		ranges = append(ranges, l.r)
	}
	if len(ranges) == 0 {
		where := f.path
		if f.readErr != nil {
			where += ", which does not exist"
		}
		it.Detail = fmt.Sprintf("no range for %s in %s: hutch falls back to single-UID mode", who, where)
		it.Fix = addRangeFix(f, uid, name, idRange{start: free, count: minSubIDs})
		return it
	}
	if a, b, found := overlap(ranges); found {
		it.Detail = fmt.Sprintf("ranges %s and %s for %s in %s overlap, and the kernel refuses the map: hutch falls back to single-UID mode",
			a, b, who, f.path)
		it.Fix = fmt.Sprintf("run as root: delete one of the overlapping lines of %s for %s", f.path, who)
		return it
	}
	var shown []string
	for _, r := range ranges {
		shown = append(shown, r.String())
	}
	n := usableIDs(ranges, uint64(f.self))
	it.Detail = fmt.Sprintf("%s: %s (%d ids)", who, strings.Join(shown, ", "), n)
	if n < minSubIDs {
		it.Status = Warning
		it.Detail += fmt.Sprintf(", fewer than %d: images with files owned by higher ids (nobody is 65534) fail to extract", minSubIDs)
		it.Fix = addRangeFix(f, uid, name, idRange{start: free, count: minSubIDs})
		return it
	}
	it.Status = OK
	return it
}

// addRangeFix is the root command that gives the user range r in f.
func addRangeFix(f subIDFile, uid int, name string, r idRange) string {
	if name == "" {
		return fmt.Sprintf("run as root: echo %d:%d:%d >> %s", uid, r.start, r.count, f.path)
	}
	flag := "--add-subuids"
	if f.kind == "subgid" {
		flag = "--add-subgids"
	}
	return fmt.Sprintf("run as root: usermod %s %s %s", flag, r, name)
}

func checkSubIDs(_ context.Context, env *Env) []Item {
	if env.Rootful {
		return []Item{
			{Check: CheckSubID, Name: "subuid range", Detail: rootNotNeeded},
			{Check: CheckSubID, Name: "subgid range", Detail: rootNotNeeded},
		}
	}
	files := []subIDFile{
		{kind: "subuid", path: env.SubUIDFile, self: env.UID},
		{kind: "subgid", path: env.SubGIDFile, self: env.GID},
	}
	var all [][]subIDLine
	for i := range files {
		data, err := os.ReadFile(files[i].path)
		files[i].data, files[i].readErr = string(data), err
		lines, _ := parseSubIDs(files[i].data)
		all = append(all, lines)
	}
	free := freeStart(all...)
	items := make([]Item, 0, len(files))
	for _, f := range files {
		items = append(items, subIDItem(f, env.UID, env.User, free))
	}
	return items
}
