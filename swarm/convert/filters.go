package convert

import (
	"encoding/json"
	"sort"
)

// Filters are a request's `filters` query: each key's values.
type Filters map[string][]string

// ParseFilters reads Docker's filters JSON ({"key":{"value":true}}, or the
// old {"key":["value"]}) and refuses keys outside allowed with Docker's
// message.
func ParseFilters(raw string, allowed ...string) (Filters, error) {
	out := Filters{}
	if raw == "" {
		return out, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, invalid("invalid filter: %v", err)
	}
	ok := map[string]bool{}
	for _, k := range allowed {
		ok[k] = true
	}
	for k, v := range m {
		if !ok[k] {
			return nil, invalid("invalid filter '%s'", k)
		}
		var set map[string]bool
		if err := json.Unmarshal(v, &set); err == nil {
			for s, on := range set {
				if on {
					out[k] = append(out[k], s)
				}
			}
		} else {
			var list []string
			if err := json.Unmarshal(v, &list); err != nil {
				return nil, invalid("invalid filter: the values of %q are neither a list nor a set", k)
			}
			out[k] = append(out[k], list...)
		}
		sort.Strings(out[k])
	}
	return out, nil
}

// Labels are the label filters as SwarmKit takes them: key to value,
// "" for a key alone.
func (f Filters) Labels(key string) map[string]string {
	if len(f[key]) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, v := range f[key] {
		k, val, _ := cutByte(v, '=')
		out[k] = val
	}
	return out
}

func cutByte(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
