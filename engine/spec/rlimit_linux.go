package spec

import "golang.org/x/sys/unix"

var rlimitResources = map[string]int{
	"as": unix.RLIMIT_AS, "core": unix.RLIMIT_CORE, "cpu": unix.RLIMIT_CPU,
	"data": unix.RLIMIT_DATA, "fsize": unix.RLIMIT_FSIZE, "locks": unix.RLIMIT_LOCKS,
	"memlock": unix.RLIMIT_MEMLOCK, "msgqueue": unix.RLIMIT_MSGQUEUE, "nice": unix.RLIMIT_NICE,
	"nofile": unix.RLIMIT_NOFILE, "nproc": unix.RLIMIT_NPROC, "rss": unix.RLIMIT_RSS,
	"rtprio": unix.RLIMIT_RTPRIO, "rttime": unix.RLIMIT_RTTIME, "sigpending": unix.RLIMIT_SIGPENDING,
	"stack": unix.RLIMIT_STACK,
}

// getrlimit reads the engine's own limit; RLIM_INFINITY is math.MaxUint64
// on Linux, as in the spec.
func getrlimit(name string) (Rlimit, bool) {
	res, ok := rlimitResources[name]
	if !ok {
		return Rlimit{}, false
	}
	var l unix.Rlimit
	if unix.Getrlimit(res, &l) != nil {
		return Rlimit{}, false
	}
	return Rlimit{Soft: l.Cur, Hard: l.Max}, true
}
