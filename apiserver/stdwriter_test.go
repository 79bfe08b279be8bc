package apiserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
)

func TestFrameWritersRoundTrip(t *testing.T) {
	var wire bytes.Buffer
	stdout, stderr := newFrameWriters(&wire)
	big := strings.Repeat("x", maxFrame*2+5)
	for _, w := range []struct {
		w    interface{ Write([]byte) (int, error) }
		data string
	}{{stdout, "hello\n"}, {stderr, "oops\n"}, {stdout, big}, {stderr, ""}} {
		if n, err := w.w.Write([]byte(w.data)); err != nil || n != len(w.data) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, &wire); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello\n"+big || errb.String() != "oops\n" {
		t.Errorf("demultiplexed stdout %d bytes, stderr %q", out.Len(), errb.String())
	}
}
