package config

import (
	"fmt"
	"time"
)

// Duration is a time.Duration that travels in the encoded Config as Go's
// duration string ("5m0s").
type Duration time.Duration

// MarshalText writes Go's duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads Go's duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseIdleExit reads an idle-exit value: a duration such as "5m" or
// "90s"; "0" turns idle exit off.
func ParseIdleExit(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("idle-exit %q: want a duration such as 5m or 90s (0 turns it off)", v)
	}
	if d > 0 && d < time.Second {
		return 0, fmt.Errorf("idle-exit %q: at least 1s", v)
	}
	return d, nil
}
