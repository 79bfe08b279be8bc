package wire

import (
	"slices"
	"testing"
)

func TestOneP(t *testing.T) {
	in := []string{"PATH=/bin", "GOMAXPROCS=8", "HOME=/root", "GOMAXPROCS=4"}
	got := OneP(in)
	want := []string{"PATH=/bin", "HOME=/root", "GOMAXPROCS=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("OneP(%q) = %q, want %q", in, got, want)
	}
	if in[1] != "GOMAXPROCS=8" {
		t.Fatalf("OneP changed its input: %q", in)
	}
}
