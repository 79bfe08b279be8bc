package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine/container"
)

func TestProbeConfig(t *testing.T) {
	c := &container.Container{Config: &containertypes.Config{Healthcheck: &containertypes.HealthConfig{Test: []string{"CMD-SHELL", "true"}, Retries: 5}}}
	hc := probeConfig(c)
	if hc == nil || hc.Interval != 30*time.Second || hc.Timeout != 30*time.Second || hc.StartInterval != 5*time.Second || hc.Retries != 5 {
		t.Errorf("probeConfig = %+v", hc)
	}
	for _, test := range [][]string{nil, {"NONE"}} {
		c.Config.Healthcheck.Test = test
		if hc := probeConfig(c); hc != nil {
			t.Errorf("probeConfig with test %q = %+v, want none", test, hc)
		}
	}
	if probeConfig(&container.Container{Config: &containertypes.Config{}}) != nil {
		t.Error("probeConfig without a healthcheck is not nil")
	}
}

func TestProbeCommand(t *testing.T) {
	c := &container.Container{Config: &containertypes.Config{}}
	for _, tc := range []struct {
		test, want []string
	}{
		{[]string{"CMD", "curl", "-f", "x"}, []string{"curl", "-f", "x"}},
		{[]string{"CMD-SHELL", "test -f /ok"}, []string{"/bin/sh", "-c", "test -f /ok"}},
		{[]string{"CMD"}, nil},
		{[]string{"CMD-SHELL", "a", "b"}, nil},
		{[]string{"WHAT", "x"}, nil},
	} {
		got, err := probeCommand(c, tc.test)
		if !slices.Equal(got, tc.want) || (tc.want == nil) != (err != nil) {
			t.Errorf("probeCommand(%q) = %q, %v", tc.test, got, err)
		}
	}
	c.Config.Shell = []string{"/bin/ash", "-eo", "pipefail", "-c"}
	if got, _ := probeCommand(c, []string{"CMD-SHELL", "x"}); !slices.Equal(got, []string{"/bin/ash", "-eo", "pipefail", "-c", "x"}) {
		t.Errorf("probeCommand with SHELL = %q", got)
	}
}

func TestValidateHealthcheck(t *testing.T) {
	ok := []*containertypes.HealthConfig{nil, {}, {Interval: time.Millisecond, Timeout: time.Second, Retries: 1}}
	for _, hc := range ok {
		if err := validateHealthcheck(hc); err != nil {
			t.Errorf("validateHealthcheck(%+v) = %v", hc, err)
		}
	}
	for hc, want := range map[*containertypes.HealthConfig]string{
		{Interval: time.Microsecond}:      "Interval in Healthcheck cannot be less than 1ms",
		{Timeout: time.Nanosecond}:        "Timeout in Healthcheck cannot be less than 1ms",
		{StartPeriod: time.Microsecond}:   "StartPeriod in Healthcheck cannot be less than 1ms",
		{StartInterval: time.Microsecond}: "StartInterval in Healthcheck cannot be less than 1ms",
		{Retries: -1}:                     "Retries in Healthcheck cannot be negative",
	} {
		if err := validateHealthcheck(hc); err == nil || err.Error() != want {
			t.Errorf("validateHealthcheck(%+v) = %v, want %q", hc, err, want)
		}
	}
}

func TestLimitedBuffer(t *testing.T) {
	var b limitedBuffer
	b.Write([]byte(strings.Repeat("x", maxProbeOutput-1)))
	if n, err := b.Write([]byte("yz")); n != 2 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if s := b.String(); len(s) != maxProbeOutput || !strings.HasSuffix(s, "xy") {
		t.Errorf("kept %d bytes ending %q", len(s), s[len(s)-2:])
	}
}
