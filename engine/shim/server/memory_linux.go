package server

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// settleDelay is how long after the last exec's end the shim gives its
// free memory back to the kernel.
const settleDelay = 500 * time.Millisecond

// settler returns the shim's free heap to the kernel once a run of execs
// is over. A shim idles for its container's whole life, and its resident
// memory is the container's overhead (docs/design.md, Performance goals: 3 MiB). The garbage of
// execs (a health check every few seconds) grows the heap to its
// collector's goal, and the pages the collector frees stay resident
// until the runtime's scavenger returns them, which it does only above
// the goal: a shim of a `sleep` went from 2.6 to 4.6 MiB in 240 execs.
//
// Not before the first collection has run on its own: the first one
// makes the runtime's sweep bookkeeping resident for good (about 600
// KiB, more than the garbage of a few execs), so a container with one
// exec keeps the memory of one exec.
type settler struct {
	mu    sync.Mutex
	timer *time.Timer
}

// soon settles the memory settleDelay from now, unless another exec ends
// first (then settleDelay after that one).
func (st *settler) soon() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.timer == nil {
		st.timer = time.AfterFunc(settleDelay, settle)
		return
	}
	st.timer.Reset(settleDelay)
}

func settle() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.NumGC == 0 {
		return
	}
	debug.FreeOSMemory()
}
