package images

import (
	"sort"
	"strings"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
)

// sortedValues lists the values of key in a stable order.
func sortedValues(f container.Filters, key string) []string {
	vs := make([]string, 0, len(f[key]))
	for v := range f[key] {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	return vs
}

// filterBool reads a boolean filter as Docker does: absent is def; "true"
// or "1", "false" or "0"; anything else, or both, is an invalid filter.
func filterBool(f container.Filters, key string, def bool) (bool, error) {
	vs, ok := f[key]
	if !ok {
		return def, nil
	}
	isTrue, isFalse := false, false
	for v := range vs {
		switch strings.ToLower(v) {
		case "true", "1":
			isTrue = true
		case "false", "0":
			isFalse = true
		default:
			isTrue, isFalse = true, true
		}
	}
	if isTrue == isFalse {
		return def, errdefs.ErrInvalidArgument.WithMessage("invalid filter '" + key + "=" + strings.Join(sortedValues(f, key), ",") + "'")
	}
	return isTrue, nil
}
