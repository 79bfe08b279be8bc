package network

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootless-containers/rootlesskit/v3/pkg/api"
	"github.com/rootless-containers/rootlesskit/v3/pkg/api/client"
)

// The engine logs what rootlesskit's child chose, read from a fake of
// rootlesskit's API: the backend once the child answered, a warning with a
// reason when it never does.
func TestReportSourceAddress(t *testing.T) {
	defer func(w time.Duration) { sourceIPWait = w }(sourceIPWait)
	sourceIPWait = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		answers []string // the backend of each Info answer; the last repeats
		want    string
	}{
		{"nft at once", []string{"nft"}, `level=INFO msg="published TCP ports keep the client's source address (loopback clients excepted)" firewall=nft`},
		{"after the handshake", []string{"none", "none", "iptables"}, "firewall=iptables"},
		{"never", []string{"none"}, `level=WARN msg="published ports do not keep the client's source address`},
		{"option off", []string{""}, "level=WARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "api.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b := tc.answers[min(int(calls.Add(1))-1, len(tc.answers)-1)]
				info := api.Info{APIVersion: "1.1.3", PortDriver: &api.PortDriverInfo{Driver: "builtin"}}
				if b != "" {
					info.PortDriver.Extra = map[string]string{sourceIPExtra: b}
				}
				json.NewEncoder(w).Encode(info)
			})}
			go srv.Serve(l)
			defer srv.Close()
			c, err := client.New(sock)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			d := &Driver{ports: c, log: slog.New(slog.NewTextHandler(&buf, nil)), stop: make(chan struct{})}
			d.reportSourceAddress(context.Background())
			if got := buf.String(); !strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("log %q, want one line with %q", got, tc.want)
			}
		})
	}
}
