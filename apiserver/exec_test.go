package apiserver

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/hutch-engine/hutch/engine"
)

// fakeExec has one exec instance, "exec1". Attached, its process echoes
// stdin upper-cased on stdout and says "err" on stderr.
type fakeExec struct {
	fakeBackend
	mu      sync.Mutex
	created containertypes.ExecCreateRequest
	start   engine.ExecStartRequest
	resized [2]uint16
	// startErr fails the start after Ready (the process could not run).
	startErr error
	// files answers the archive calls.
	files     map[string]string
	extracted engine.ExtractRequest
	body      string
}

func (f *fakeExec) ExecCreate(_ context.Context, ref string, req containertypes.ExecCreateRequest) (string, error) {
	if ref == "stopped" {
		return "", errdefs.ErrConflict.WithMessage("container stopped is not running")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = req
	return "exec1", nil
}

func (f *fakeExec) ExecStart(_ context.Context, id string, req engine.ExecStartRequest, stdin io.Reader, stdout, stderr io.Writer) error {
	if id != "exec1" {
		return errdefs.ErrNotFound.WithMessage("No such exec instance: " + id)
	}
	f.mu.Lock()
	f.start = req
	startErr := f.startErr
	f.mu.Unlock()
	if req.Ready != nil {
		req.Ready()
	}
	if startErr != nil || req.Detach {
		return startErr
	}
	in, _ := io.ReadAll(stdin)
	stdout.Write(bytes.ToUpper(in))
	stderr.Write([]byte("err"))
	return nil
}

func (f *fakeExec) ExecInspect(_ context.Context, id string) (containertypes.ExecInspectResponse, error) {
	if id != "exec1" {
		return containertypes.ExecInspectResponse{}, errdefs.ErrNotFound.WithMessage("No such exec instance: " + id)
	}
	code := 3
	return containertypes.ExecInspectResponse{ID: id, ExitCode: &code, Pid: 42, ContainerID: "c1"}, nil
}

func (f *fakeExec) ExecResize(_ context.Context, id string, h, w uint16) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resized = [2]uint16{h, w}
	return nil
}

// serveFake serves b on a unix socket and returns an SDK client for it.
func serveFake(t *testing.T, b Backend) (*client.Client, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "hutch.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		New(b, Options{Logger: testLogger(t)}).Serve(ctx, l)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(client.WithHost("unix://" + sock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, sock
}

func TestExecCreateAndInspect(t *testing.T) {
	f := &fakeExec{}
	c, _ := serveFake(t, f)
	ctx := context.Background()
	res, err := c.ExecCreate(ctx, "c1", client.ExecCreateOptions{
		User: "1234", Privileged: true, TTY: true, ConsoleSize: client.ConsoleSize{Height: 24, Width: 80},
		AttachStdin: true, AttachStdout: true, DetachKeys: "ctrl-x", Env: []string{"A=B"}, WorkingDir: "/tmp", Cmd: []string{"sh", "-c", "x"},
	})
	if err != nil || res.ID != "exec1" {
		t.Fatalf("ExecCreate = %+v, %v", res, err)
	}
	got := f.created
	if got.User != "1234" || !got.Privileged || !got.Tty || got.ConsoleSize == nil || *got.ConsoleSize != [2]uint{24, 80} ||
		!got.AttachStdin || !got.AttachStdout || got.AttachStderr || got.DetachKeys != "ctrl-x" ||
		strings.Join(got.Env, ",") != "A=B" || got.WorkingDir != "/tmp" || strings.Join(got.Cmd, " ") != "sh -c x" {
		t.Errorf("backend got %+v", got)
	}
	if _, err := c.ExecCreate(ctx, "stopped", client.ExecCreateOptions{Cmd: []string{"true"}}); !errdefs.IsConflict(err) {
		t.Errorf("exec in a stopped container: %v", err)
	}
	in, err := c.ExecInspect(ctx, "exec1", client.ExecInspectOptions{})
	if err != nil || in.ExitCode != 3 || in.PID != 42 || in.ContainerID != "c1" {
		t.Errorf("ExecInspect = %+v, %v", in, err)
	}
	if _, err := c.ExecInspect(ctx, "nope", client.ExecInspectOptions{}); !errdefs.IsNotFound(err) {
		t.Errorf("unknown exec: %v", err)
	}
	if _, err := c.ExecResize(ctx, "exec1", client.ExecResizeOptions{Height: 30, Width: 100}); err != nil || f.resized != [2]uint16{30, 100} {
		t.Errorf("ExecResize: %v, backend got %v", err, f.resized)
	}
}

func TestExecAttach(t *testing.T) {
	tests := []struct {
		name     string
		tty      bool
		startErr error
		stdout   string
		stderr   string
	}{
		{name: "multiplexed", stdout: "HELLO", stderr: "err"},
		{name: "raw with a tty", tty: true, stdout: "HELLOerr"},
		{name: "a start failure goes into the stream", startErr: errdefs.ErrInvalidArgument.WithMessage("OCI runtime exec failed: no such file"),
			stdout: "OCI runtime exec failed: no such file\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeExec{startErr: tc.startErr}
			c, _ := serveFake(t, f)
			res, err := c.ExecAttach(context.Background(), "exec1", client.ExecAttachOptions{TTY: tc.tty})
			if err != nil {
				t.Fatal(err)
			}
			defer res.Close()
			res.Conn.Write([]byte("hello"))
			res.CloseWrite()
			var so, se bytes.Buffer
			if tc.tty {
				_, err = io.Copy(&so, res.Reader)
			} else {
				_, err = stdcopy.StdCopy(&so, &se, res.Reader)
			}
			if err != nil || so.String() != tc.stdout || se.String() != tc.stderr {
				t.Errorf("stdout %q stderr %q err %v", so.String(), se.String(), err)
			}
		})
	}
	c, _ := serveFake(t, &fakeExec{})
	// An unknown exec is a plain 404 before any hijacking (the SDK does
	// not class failed upgrades).
	if _, err := c.ExecAttach(context.Background(), "nope", client.ExecAttachOptions{}); err == nil || !strings.Contains(err.Error(), "received 404") {
		t.Errorf("attach to an unknown exec: %v", err)
	}
}

func TestExecStartDetached(t *testing.T) {
	f := &fakeExec{}
	c, _ := serveFake(t, f)
	if _, err := c.ExecStart(context.Background(), "exec1", client.ExecStartOptions{Detach: true}); err != nil {
		t.Fatal(err)
	}
	if !f.start.Detach {
		t.Errorf("backend got %+v", f.start)
	}
	if _, err := c.ExecStart(context.Background(), "nope", client.ExecStartOptions{Detach: true}); !errdefs.IsNotFound(err) {
		t.Errorf("unknown exec: %v", err)
	}
}

func TestExecBadRequests(t *testing.T) {
	_, sock := serveFake(t, &fakeExec{})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1.41/exec/exec1/resize?h=x&w=1", "", 400},
		// Docker takes 32-bit sizes; a terminal holds 65535 at most.
		{"POST", "/v1.41/exec/exec1/resize?h=70000&w=1", "", 200},
		{"POST", "/v1.41/exec/exec1/resize?h=4294967296&w=1", "", 400},
		{"POST", "/v1.41/containers/c1/exec", "{", 400},
		{"POST", "/v1.41/exec/exec1/start", "{", 400},
		{"GET", "/v1.41/exec/exec1/json", "", 200},
	} {
		req, _ := http.NewRequest(tc.method, "http://hutch"+tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
	}
}
