package oci

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestRlimitType(t *testing.T) {
	if v, ok := rlimitType("RLIMIT_NOFILE"); !ok || v != unix.RLIMIT_NOFILE {
		t.Errorf("RLIMIT_NOFILE = %d %v", v, ok)
	}
	if _, ok := rlimitType("RLIMIT_BOGUS"); ok {
		t.Error("unknown rlimit accepted")
	}
}
