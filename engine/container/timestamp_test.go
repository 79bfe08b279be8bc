package container

import (
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestParseTimestamp(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
	}{
		{"10m", now.Add(-10 * time.Minute)},
		{"1700000000", time.Unix(1700000000, 0)},
		{"1700000000.5", time.Unix(1700000000, 500000000)},
		{"2024-01-02T03:04:05Z", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"2024-01-02T03:04:05+02:00", time.Date(2024, 1, 2, 1, 4, 5, 0, time.UTC)},
		{"2024-01-02", time.Date(2024, 1, 2, 0, 0, 0, 0, time.Local)},
	}
	for _, tc := range tests {
		got, err := ParseTimestamp(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "12:00", "1.2.3", "-", "99999999999999999999"} {
		if _, err := ParseTimestamp(bad, now); !errdefs.IsInvalidArgument(err) {
			t.Errorf("ParseTimestamp(%q) = %v, want invalid argument", bad, err)
		}
	}
}

func TestPruneUntil(t *testing.T) {
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	if u, err := PruneUntil(Filters{}, now); err != nil || !u.IsZero() {
		t.Errorf("no until: %v %v", u, err)
	}
	if u, err := PruneUntil(Filters{}.Add("until", "1h"), now); err != nil || !u.Equal(now.Add(-time.Hour)) {
		t.Errorf("until=1h: %v %v", u, err)
	}
	if _, err := PruneUntil(Filters{}.Add("until", "1h", "2h"), now); !errdefs.IsInvalidArgument(err) {
		t.Errorf("two untils: %v", err)
	}
}
