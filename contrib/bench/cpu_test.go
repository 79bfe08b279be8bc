package main

import (
	"os"
	"testing"
)

func TestStatCPU(t *testing.T) {
	// comm with a space and a parenthesis; utime 150, stime 50, cutime
	// 30, cstime 20 ticks.
	line := []byte("4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 30 20 20 0 1 0 100 1000 10\n")
	ms, err := statCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if ms != 2500 {
		t.Fatalf("statCPU = %v ms, want 2500", ms)
	}
	if _, err := statCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Fatal("a short line gave no error")
	}
}

func TestReadCPU(t *testing.T) {
	a, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	b, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	u := a.use(b)
	if u.Clients <= 0 || u.Hutch < 0 || u.Idle < 0 {
		t.Fatalf("use = %+v (x %d)", u, x)
	}
}
