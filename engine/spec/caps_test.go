package spec

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestCapabilities(t *testing.T) {
	all := append(slices.Clone(defaultCaps), "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_SYS_PTRACE")
	set := capSet{known: map[string]bool{"CAP_BPF": true}, available: all}
	for _, c := range all {
		set.known[c] = true
	}
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(defaultCaps), func(c string) bool { return slices.Contains(drop, c) })
	}
	tests := []struct {
		name       string
		add, drop  []string
		privileged bool
		want       []string
		err        string
	}{
		{name: "defaults", want: defaultCaps},
		{name: "add with prefix", add: []string{"CAP_NET_ADMIN"}, want: append(slices.Clone(defaultCaps), "CAP_NET_ADMIN")},
		{name: "add lower case without prefix", add: []string{"net_admin"}, want: append(slices.Clone(defaultCaps), "CAP_NET_ADMIN")},
		{name: "add mixed case", add: []string{"Cap_Sys_Ptrace"}, want: append(slices.Clone(defaultCaps), "CAP_SYS_PTRACE")},
		{name: "add existing is not duplicated", add: []string{"chown"}, want: defaultCaps},
		{name: "drop", drop: []string{"NET_RAW", "cap_mknod"}, want: without("CAP_NET_RAW", "CAP_MKNOD")},
		{name: "add and drop", add: []string{"SYS_ADMIN"}, drop: []string{"KILL"}, want: append(without("CAP_KILL"), "CAP_SYS_ADMIN")},
		{name: "add wins over drop", add: []string{"KILL"}, drop: []string{"KILL"}, want: append(without("CAP_KILL"), "CAP_KILL")},
		{name: "drop all", drop: []string{"ALL"}},
		{name: "drop all, add some", drop: []string{"all"}, add: []string{"chown", "kill"}, want: []string{"CAP_CHOWN", "CAP_KILL"}},
		{name: "add all", add: []string{"ALL"}, want: all},
		{name: "add all, drop some", add: []string{"ALL"}, drop: []string{"SYS_ADMIN", "chown"}, want: slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == "CAP_SYS_ADMIN" || c == "CAP_CHOWN" })},
		{name: "privileged", privileged: true, drop: []string{"ALL"}, want: all},
		{name: "unknown add", add: []string{"FLY"}, err: `unknown capability: "CAP_FLY"`},
		{name: "unknown drop", drop: []string{"CAP_FLY"}, err: `unknown capability: "CAP_FLY"`},
		{name: "known but unavailable", add: []string{"BPF"}, err: "not available in the current environment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := set.capabilities(tt.add, tt.drop, tt.privileged)
			if tt.err != "" {
				if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want invalid argument containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("caps = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostCapsKnowsDefaults(t *testing.T) {
	s := hostCaps()
	for _, c := range defaultCaps {
		if !s.known[c] || !slices.Contains(s.available, c) {
			t.Errorf("%s: known %v, available %v", c, s.known[c], slices.Contains(s.available, c))
		}
	}
}
