package engine

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// linkEnv are the environment variables of a legacy link, as Docker
// writes them: name is the link's /parent/alias, ip the linked
// container's address on the default bridge, child its config (its
// exposed ports and environment). For alias "db" exposing 5432/tcp:
//
//	DB_PORT=tcp://172.17.0.2:5432
//	DB_PORT_5432_TCP=tcp://172.17.0.2:5432
//	DB_PORT_5432_TCP_ADDR=172.17.0.2
//	DB_PORT_5432_TCP_PORT=5432
//	DB_PORT_5432_TCP_PROTO=tcp
//	DB_NAME=/web/db
//	DB_ENV_<VAR>=<value> for each of its variables but HOME and PATH
//
// Consecutive ports of one protocol also get _START and _END variables
// for their range, under the first port's prefix.
func linkEnv(name, ip string, child *containertypes.Config) []string {
	_, alias := path.Split(name)
	prefix := strings.ReplaceAll(strings.ToUpper(alias), "-", "_")
	var ports []network.Port
	var childEnv []string
	if child != nil {
		ports = slices.Collect(maps.Keys(child.ExposedPorts))
		childEnv = child.Env
	}
	// TCP first, then by protocol; by number within one.
	slices.SortFunc(ports, func(a, b network.Port) int {
		if a.Proto() != b.Proto() {
			switch {
			case a.Proto() == network.TCP:
				return -1
			case b.Proto() == network.TCP:
				return 1
			}
			return cmp.Compare(a.Proto(), b.Proto())
		}
		return cmp.Compare(a.Num(), b.Num())
	})
	url := func(p network.Port) string { return fmt.Sprintf("%s://%s:%d", p.Proto(), ip, p.Num()) }
	portPrefix := func(p network.Port) string {
		return fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Num(), strings.ToUpper(string(p.Proto())))
	}
	var env []string
	if len(ports) > 0 {
		env = append(env, fmt.Sprintf("%s_PORT=%s", prefix, url(ports[0])))
	}
	// A range is written when the port after it breaks it, or at the end.
	start := 0
	for i, p := range ports {
		pp := portPrefix(p)
		env = append(env,
			pp+"="+url(p),
			pp+"_ADDR="+ip,
			fmt.Sprintf("%s_PORT=%d", pp, p.Num()),
			fmt.Sprintf("%s_PROTO=%s", pp, p.Proto()))
		last := i == len(ports)-1
		if i > 0 && !last && follows(ports[i-1], p) {
			continue
		}
		end := i - 1
		if i > 0 && follows(ports[i-1], p) {
			end = i // the range runs to the last port
		}
		if end > start {
			first, final := ports[start], ports[end]
			sp := portPrefix(first)
			env = append(env,
				sp+"_START="+url(first),
				fmt.Sprintf("%s_PORT_START=%d", sp, first.Num()),
				sp+"_END="+url(final),
				fmt.Sprintf("%s_PORT_END=%d", sp, final.Num()))
		}
		start = i
	}
	env = append(env, prefix+"_NAME="+name)
	for _, kv := range childEnv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, fmt.Sprintf("%s_ENV_%s=%s", prefix, k, v))
	}
	return env
}

// follows reports whether port b comes right after a, of one protocol.
func follows(a, b network.Port) bool {
	return a.Proto() == b.Proto() && b.Num() == a.Num()+1
}
