package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"

	"github.com/hutch-engine/hutch/engine"
)

// fakeAttach has one container without a tty; attached, it echoes its
// stdin upper-cased on stdout.
type fakeAttach struct{ fakeBackend }

func (fakeAttach) ContainerInspect(context.Context, string) (containertypes.InspectResponse, error) {
	return containertypes.InspectResponse{ID: "c1", Config: &containertypes.Config{}}, nil
}

func (fakeAttach) ContainerAttach(_ context.Context, _ string, req engine.AttachRequest, stdin io.Reader, stdout, _ io.Writer) error {
	req.Attached()
	in, _ := io.ReadAll(stdin)
	stdout.Write(bytes.ToUpper(in))
	return nil
}

// TestAttachRequestBody: the request's body is not the container's input.
// dockerode (docker-modem) sends its attach options as a JSON body with a
// Content-Length and writes stdin right after it on the same connection;
// Docker never hands that body to the container.
func TestAttachRequestBody(t *testing.T) {
	for _, tc := range []struct{ name, body, stdin string }{
		{"json body", `{"stream":true,"stdin":true,"stdout":true,"hijack":true}`, "hello\n"},
		{"no body", "", "hello\n"},
		{"body alone", `{"stdin":true}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, sock := serveFake(t, &fakeAttach{})
			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST /v1.47/containers/c1/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
			if tc.body != "" {
				head += fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(tc.body))
			}
			// One write, as node sends the head with the body: the
			// server reads the stdin that follows into its buffer too.
			if _, err := io.WriteString(conn, head+"\r\n"+tc.body+tc.stdin); err != nil {
				t.Fatal(err)
			}
			conn.(*net.UnixConn).CloseWrite()
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %d", resp.StatusCode)
			}
			var out, errOut bytes.Buffer
			if _, err := stdcopy.StdCopy(&out, &errOut, br); err != nil {
				t.Fatal(err)
			}
			if want := string(bytes.ToUpper([]byte(tc.stdin))); out.String() != want {
				t.Errorf("the container read %q, want %q", out.String(), want)
			}
		})
	}
}
