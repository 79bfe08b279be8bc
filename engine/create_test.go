package engine

import (
	"testing"

	"github.com/containerd/errdefs"
	containertypes "github.com/moby/moby/api/types/container"
)

// The host configs Docker refuses at create, in its words; each is an
// invalid argument (400).
func TestValidateHostConfigMessages(t *testing.T) {
	rp := func(name string, n int) containertypes.HostConfig {
		return containertypes.HostConfig{RestartPolicy: containertypes.RestartPolicy{Name: containertypes.RestartPolicyMode(name), MaximumRetryCount: n}}
	}
	tests := []struct {
		name string
		hc   containertypes.HostConfig
		want string // "" is valid
	}{
		{"unknown policy", rp("something", 0), "invalid restart policy: unknown policy 'something'; use one of 'no', 'always', 'on-failure', or 'unless-stopped'"},
		{"retries with always", rp("always", 2), "invalid restart policy: maximum retry count can only be used with 'on-failure'"},
		{"negative retries with always", rp("always", -1), "invalid restart policy: maximum retry count can only be used with 'on-failure' and cannot be negative"},
		{"negative retries", rp("on-failure", -2), "invalid restart policy: maximum retry count cannot be negative"},
		{"default retries", rp("on-failure", 0), ""},
		{"empty name takes retries", rp("", 3), ""},
		{"UTS mode", containertypes.HostConfig{UTSMode: "invalid"}, "invalid UTS mode: invalid"},
		{"UTS host", containertypes.HostConfig{UTSMode: "host"}, ""},
		{"empty annotation key", containertypes.HostConfig{Annotations: map[string]string{"": "a"}}, "invalid Annotations: the empty string is not permitted as an annotation key"},
		{"annotations", containertypes.HostConfig{Annotations: map[string]string{"com.example.key": ""}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateHostConfig(&tc.hc)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want invalid argument %q", err, tc.want)
			}
		})
	}
}
