package engine

import (
	"strings"
	"sync"

	"github.com/moby/sys/capability"
)

// privilegedCaps is every capability the engine itself holds: what docker
// exec --privileged gives the process, as a privileged container gets.
var privilegedCaps = sync.OnceValue(func() []string {
	var out []string
	if cur, err := capability.NewPid2(0); err == nil && cur.Load() == nil {
		for _, c := range capability.ListKnown() {
			if cur.Get(capability.EFFECTIVE, c) {
				out = append(out, "CAP_"+strings.ToUpper(c.String()))
			}
		}
	}
	return out
})
