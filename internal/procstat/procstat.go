// Package procstat reads /proc/PID/stat, whose second field, the
// command's name, may hold spaces and parentheses: the fields after it
// are found from its last ')'.
package procstat

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Read returns the command's name of process pid and the fields of its
// stat after the name, from the state on (Fields[1] is the parent's pid);
// ok is false when the process is gone or the line is not a stat line.
func Read(pid string) (comm string, fields []string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", nil, false
	}
	return Parse(b)
}

// Parse splits one stat line as Read does.
func Parse(b []byte) (comm string, fields []string, ok bool) {
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return "", nil, false
	}
	fields = strings.Fields(string(b[close+1:]))
	if len(fields) < 2 {
		return "", nil, false
	}
	return string(b[open+1 : close]), fields, true
}

// Proc is a process found by Children.
type Proc struct {
	PID   int
	Comm  string
	State string // R, S, D, Z, ...
}

// Children lists the processes whose parent is ppid, by a walk of /proc
// (kernels without CONFIG_PROC_CHILDREN have no task/TID/children).
func Children(ppid int) []Proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := strconv.Itoa(ppid)
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, f, ok := Read(e.Name())
		if ok && f[1] == parent {
			out = append(out, Proc{PID: pid, Comm: comm, State: f[0]})
		}
	}
	return out
}
