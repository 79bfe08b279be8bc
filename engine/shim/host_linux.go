package shim

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DetectHost looks at the current process's user namespace and cgroups.
func DetectHost() Host {
	uids := readIDMap("/proc/self/uid_map")
	gids := readIDMap("/proc/self/gid_map")
	h := Host{
		InUserNS:  !(len(uids) == 1 && uids[0] == idRange{0, 0, 4294967295}),
		UIDMapped: uids.contains,
		GIDMapped: gids.contains,
	}
	h.CgroupLimits = !h.InUserNS || delegatedCgroup2()
	return h
}

type idRange struct{ inside, outside, size uint64 }

type idMap []idRange

func (m idMap) contains(id uint32) bool {
	for _, r := range m {
		if uint64(id) >= r.inside && uint64(id) < r.inside+r.size {
			return true
		}
	}
	return false
}

func readIDMap(path string) idMap {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var m idMap
	s := bufio.NewScanner(f)
	for s.Scan() {
		fs := strings.Fields(s.Text())
		if len(fs) != 3 {
			continue
		}
		var r [3]uint64
		ok := true
		for i, v := range fs {
			if r[i], err = strconv.ParseUint(v, 10, 64); err != nil {
				ok = false
			}
		}
		if ok {
			m = append(m, idRange{r[0], r[1], r[2]})
		}
	}
	return m
}

// delegatedCgroup2 reports a cgroup v2 host on which our own cgroup is
// writable (systemd Delegate=yes), the only case where a rootless
// container's limits can be enforced.
func delegatedCgroup2() bool {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return unix.Access(filepath.Join("/sys/fs/cgroup", p, "cgroup.subtree_control"), unix.W_OK) == nil
		}
	}
	return false
}
