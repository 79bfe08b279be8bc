//go:build integration

package integration

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// TestPlayground keeps a daemon with busybox up for manual experiments
// (HUTCH_PLAYGROUND=minutes).
func TestPlayground(t *testing.T) {
	m := os.Getenv("HUTCH_PLAYGROUND")
	if m == "" {
		return
	}
	d, ref := pulled(t)
	fmt.Printf("export DOCKER_HOST=%s REF=%s\n", d.Host(), ref)
	os.WriteFile("/tmp/ht-play/env", []byte(fmt.Sprintf("export DOCKER_HOST=%s REF=%s\nDLOG=%s\n", d.Host(), ref, "")), 0o644)
	for i := 0; i < 600; i++ {
		os.WriteFile("/tmp/ht-play/daemon.log", []byte(d.Log()), 0o644)
		time.Sleep(time.Second)
		if _, err := os.Stat("/tmp/ht-play/stop"); err == nil {
			return
		}
	}
}
