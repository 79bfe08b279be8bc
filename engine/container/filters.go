package container

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
)

// Filters is the decoded "filters" query parameter of the Docker API: each
// key ("label", "status"…) maps to a set of values. It has the shape of the
// client's client.Filters; the API module has no server-side type.
//
// An item matches when every key matches; a key matches when one of its
// values does (except "label", where every value must, as in Docker).
type Filters map[string]map[string]bool

// ParseFilters decodes the "filters" query parameter: {"label":{"a=b":true}}
// as clients send it today, or the older {"label":["a=b"]} that API
// versions before 1.22 used. The empty string is no filter. Errors are
// errdefs.ErrInvalidArgument (Docker answers 400 "invalid filter").
func ParseFilters(s string) (Filters, error) {
	out := Filters{}
	if s == "" {
		return out, nil
	}
	var sets map[string]map[string]bool
	if err := json.Unmarshal([]byte(s), &sets); err == nil {
		for k, vs := range sets {
			out[k] = make(map[string]bool, len(vs))
			for v := range vs {
				out[k][v] = true
			}
		}
		return out, nil
	}
	var lists map[string][]string
	if err := json.Unmarshal([]byte(s), &lists); err != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage("invalid filter: " + err.Error())
	}
	for k, vs := range lists {
		out[k] = make(map[string]bool, len(vs))
		for _, v := range vs {
			out[k][v] = true
		}
	}
	return out, nil
}

// Add puts values in the set of key and returns f, for building filters in
// code: Filters{}.Add("label", "app=web").
func (f Filters) Add(key string, values ...string) Filters {
	if f[key] == nil {
		f[key] = map[string]bool{}
	}
	for _, v := range values {
		f[key][v] = true
	}
	return f
}

// values lists the values of key in a stable order.
func (f Filters) values(key string) []string {
	vs := make([]string, 0, len(f[key]))
	for v := range f[key] {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	return vs
}

// listKeys are the keys docker ps accepts; isolation means nothing on Linux
// and is accepted and ignored, as dockerd does.
var listKeys = map[string]bool{
	"ancestor": true, "annotation": true, "before": true, "exited": true, "expose": true,
	"health": true, "id": true, "is-task": true, "isolation": true,
	"label": true, "name": true, "network": true, "publish": true,
	"since": true, "status": true, "volume": true,
}

func invalidFilter(format string, args ...any) error {
	return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf(format, args...))
}

// pattern is a filter value that matches a string exactly or, as in Docker,
// as an unanchored regular expression ("name=web" matches "/web-1").
type pattern struct {
	exact string
	re    *regexp.Regexp // nil when the value is not a valid expression
}

func (p pattern) match(s string) bool {
	return s == p.exact || p.re != nil && p.re.MatchString(s)
}

func patterns(values []string) []pattern {
	ps := make([]pattern, len(values))
	for i, v := range values {
		ps[i].exact = v
		ps[i].re, _ = regexp.Compile(v)
	}
	return ps
}

// listFilter is Filters checked and compiled for List.
type listFilter struct {
	ids         []string
	names       []pattern
	linkNames   map[string][]string // by ID, for names: the links' (LinkNames)
	labels      []string
	annotations []string
	statuses    map[Status]bool
	exited      []int
	health      map[string]bool
	isTask      *bool
	ancestor    bool
	volumes     map[string]bool
	networks    []string
	publish     []network.PortRange
	expose      []network.PortRange
	before      *string // nil when not filtered
	since       *string
	anyStatus   bool // a status filter lists stopped containers too
}

// compile checks f's keys and values with Docker's messages.
func compile(f Filters) (*listFilter, error) {
	lf := &listFilter{}
	for k := range f {
		if !listKeys[k] {
			return nil, invalidFilter("invalid filter '%s'", k)
		}
	}
	lf.ids = f.values("id")
	lf.names = patterns(f.values("name"))
	lf.labels = f.values("label")
	lf.annotations = f.values("annotation")
	for _, v := range f.values("exited") {
		code, err := strconv.Atoi(v)
		if err != nil {
			return nil, invalidFilter("invalid filter 'exited=%s': %v", v, err)
		}
		lf.exited = append(lf.exited, code)
	}
	if vs := f.values("status"); len(vs) > 0 {
		lf.statuses = map[Status]bool{}
		lf.anyStatus = true
		for _, v := range vs {
			if err := containertypes.ValidateContainerState(containertypes.ContainerState(v)); err != nil {
				return nil, invalidFilter("invalid filter 'status=%s': %v", v, err)
			}
			lf.statuses[Status(v)] = true
		}
	}
	if vs := f.values("health"); len(vs) > 0 {
		lf.health = map[string]bool{}
		for _, v := range vs {
			if err := containertypes.ValidateHealthStatus(containertypes.HealthStatus(v)); err != nil {
				return nil, invalidFilter("invalid filter 'health=%s': %v", v, err)
			}
			lf.health[v] = true
		}
	}
	if vs, ok := f["is-task"]; ok {
		no, yes := vs["0"] || vs["false"], vs["1"] || vs["true"]
		if no == yes {
			return nil, invalidFilter("invalid filter 'is-task=%v'", f.values("is-task"))
		}
		lf.isTask = &yes
	}
	_, lf.ancestor = f["ancestor"]
	if vs := f.values("volume"); len(vs) > 0 {
		lf.volumes = map[string]bool{}
		for _, v := range vs {
			lf.volumes[v] = true
		}
	}
	lf.networks = f.values("network")
	var err error
	if lf.publish, err = portRanges("publish", f.values("publish")); err != nil {
		return nil, err
	}
	if lf.expose, err = portRanges("expose", f.values("expose")); err != nil {
		return nil, err
	}
	// Several before/since values make no sense; like Docker, the last
	// one (here: the greatest) wins.
	if vs := f.values("before"); len(vs) > 0 {
		lf.before = &vs[len(vs)-1]
	}
	if vs := f.values("since"); len(vs) > 0 {
		lf.since = &vs[len(vs)-1]
	}
	return lf, nil
}

func portRanges(key string, values []string) ([]network.PortRange, error) {
	var out []network.PortRange
	for _, v := range values {
		if strings.Contains(v, ":") {
			return nil, invalidFilter("filter for '%s' should not contain ':': %s", key, v)
		}
		pr, err := network.ParsePortRange(v)
		if err != nil {
			return nil, invalidFilter("error while looking up for %s %s: %v", key, v, err)
		}
		out = append(out, pr)
	}
	return out, nil
}

func inRanges(ranges []network.PortRange, port uint16, proto string) bool {
	for _, r := range ranges {
		if port >= r.Start() && port <= r.End() && string(r.Proto()) == proto {
			return true
		}
	}
	return false
}

// match applies every filter but before/since (positional, done by List).
// ancestors are the image IDs an "ancestor" filter accepts.
func (lf *listFilter) match(c *Container, ancestors map[string]bool) bool {
	if len(lf.ids) > 0 && !anyPrefix(c.ID, lf.ids) {
		return false
	}
	if len(lf.names) > 0 && !matchName(lf.names, c.Name) && !slices.ContainsFunc(lf.linkNames[c.ID], func(n string) bool { return matchName(lf.names, n) }) {
		return false
	}
	if len(lf.labels) > 0 && !MatchLabels(lf.labels, c.labels()) {
		return false
	}
	// As Docker's: "key" or "key=value" of HostConfig.Annotations, every
	// one given.
	if len(lf.annotations) > 0 && !MatchLabels(lf.annotations, c.annotations()) {
		return false
	}
	if len(lf.exited) > 0 && !lf.matchExited(c.State) {
		return false
	}
	if lf.statuses != nil && !lf.statuses[c.State.Effective()] {
		return false
	}
	if lf.health != nil && !lf.health[string(c.State.HealthStatus())] {
		return false
	}
	// …and none is a swarm task.
	if lf.isTask != nil && *lf.isTask {
		return false
	}
	if lf.ancestor && !ancestors[c.ImageID] {
		return false
	}
	if lf.volumes != nil && !lf.matchVolume(c.Mounts) {
		return false
	}
	if len(lf.networks) > 0 && !matchNetwork(lf.networks, c.NetworkSettings) {
		return false
	}
	if len(lf.publish) > 0 || len(lf.expose) > 0 {
		return lf.matchPorts(c.ports())
	}
	return true
}

func anyPrefix(id string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// matchName tries the name with and without its "/", as Docker does.
func matchName(ps []pattern, name string) bool {
	bare := strings.TrimPrefix(name, "/")
	for _, p := range ps {
		if p.match(name) || p.match(bare) {
			return true
		}
	}
	return false
}

// ParseFiltersOf is ParseFilters for an endpoint that takes the keys
// accepted only: any other is refused with Docker's "invalid filter
// 'key'" (the first in sorted order, so the answer does not vary).
func ParseFiltersOf(s string, accepted map[string]bool) (Filters, error) {
	f, err := ParseFilters(s)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !accepted[k] {
			return nil, errdefs.ErrInvalidArgument.WithMessage("invalid filter '" + k + "'")
		}
	}
	return f, nil
}

// MatchLabels is Docker's label filter (its MatchKVList): every "key" or
// "key=value" of values holds for labels. No values match everything.
func MatchLabels(values []string, labels map[string]string) bool {
	for _, v := range values {
		k, val, hasVal := strings.Cut(v, "=")
		got, ok := labels[k]
		if !ok || hasVal && got != val {
			return false
		}
	}
	return true
}

// PruneLabels is the label filter of Docker's prunes: every "label"
// holds, and the "label!" values, when given, do not all hold.
func PruneLabels(f Filters, labels map[string]string) bool {
	not := f.Values("label!")
	return MatchLabels(f.Values("label"), labels) && (len(not) == 0 || !MatchLabels(not, labels))
}

// MatchAny is Docker's filter match of a name or id: one of values is s
// itself, or a regular expression found in s (so a plain word matches as
// a substring).
func MatchAny(values []string, s string) bool {
	for _, v := range values {
		if v == s {
			return true
		}
		if re, err := regexp.Compile(v); err == nil {
			if re.MatchString(s) {
				return true
			}
		} else if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// Bool is the one boolean value of filter key (dangling=true), nil when
// it is not given.
func (f Filters) Bool(key string) (*bool, error) {
	vs := f.Values(key)
	if len(vs) == 0 {
		return nil, nil
	}
	if len(vs) > 1 {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("got more than one value for filter key %q", key))
	}
	b, err := strconv.ParseBool(vs[0])
	if err != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid value for filter %q: %q", key, vs[0]))
	}
	return &b, nil
}

// matchExited only matches containers that ran and stopped.
func (lf *listFilter) matchExited(s State) bool {
	if s.Running() || s.StartedAt.IsZero() {
		return false
	}
	for _, code := range lf.exited {
		if code == s.ExitCode {
			return true
		}
	}
	return false
}

func (lf *listFilter) matchVolume(mounts []containertypes.MountPoint) bool {
	for _, m := range mounts {
		if lf.volumes[m.Destination] || m.Name != "" && lf.volumes[m.Name] || m.Name == "" && lf.volumes[m.Source] {
			return true
		}
	}
	return false
}

// matchNetwork accepts a network name or a prefix of a network ID.
func matchNetwork(values []string, ns *containertypes.NetworkSettings) bool {
	if ns == nil {
		return false
	}
	for _, v := range values {
		if _, ok := ns.Networks[v]; ok {
			return true
		}
		for _, ep := range ns.Networks {
			if ep != nil && strings.HasPrefix(ep.NetworkID, v) {
				return true
			}
		}
	}
	return false
}

func (lf *listFilter) matchPorts(ports []containertypes.PortSummary) bool {
	for _, p := range ports {
		if inRanges(lf.publish, p.PublicPort, p.Type) || inRanges(lf.expose, p.PrivatePort, p.Type) {
			return true
		}
	}
	return false
}

// Values returns the values given for key.
func (f Filters) Values(key string) []string { return f.values(key) }
