package container

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
)

// ParseTimestamp reads the time of an "until" filter as Docker does: a Go
// duration before now ("24h", "10m"), Unix seconds with an optional
// fraction ("1700000000.5"), an RFC 3339 time, or a date and time without
// zone (local time), down to a bare date ("2024-01-31"). A bad one gets
// the words of Docker's timestamp package.
func ParseTimestamp(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, errdefs.ErrInvalidArgument.WithMessage("failed to parse value as time or duration: value is empty")
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if sec, frac, ok := strings.Cut(v, "."); isDigits(sec) && (!ok || isDigits(frac)) {
		s, err := strconv.ParseInt(sec, 10, 64)
		if err == nil && s <= math.MaxInt64/int64(time.Second) {
			var ns int64
			if ok {
				if len(frac) > 9 {
					frac = frac[:9]
				}
				ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
			}
			return time.Unix(s, ns), nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02T15", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errdefs.ErrInvalidArgument.WithMessage("failed to parse value as time or duration: " + strconv.Quote(v))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// PruneKeys are the filter keys container and network prunes take, as
// Docker's: "until", "label" and "label!" (PruneUntil, PruneLabels).
var PruneKeys = map[string]bool{"label": true, "label!": true, "until": true}

// PruneUntil is the "until" of a prune's filters: the zero time when
// there is none; more than one is an error, as Docker's.
func PruneUntil(f Filters, now time.Time) (time.Time, error) {
	switch vs := f.Values("until"); len(vs) {
	case 0:
		return time.Time{}, nil
	case 1:
		return ParseTimestamp(vs[0], now)
	default:
		return time.Time{}, errdefs.ErrInvalidArgument.WithMessage("more than one until filter specified")
	}
}
