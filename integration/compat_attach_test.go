//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	containertypes "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// Bad detach keys are a 400 answered before the connection is upgraded,
// in Docker's words (moby's TestAttachRejectsInvalidDetachKeys); Docker's
// key names are lower case.
func TestAttachRefusesBadDetachKeys(t *testing.T) {
	d, ref := pulled(t)
	id := dockerOK(t, d, "create", "-t", ref, "top")
	for _, keys := range []string{"ctrl-A,a", "ctrl-1", "alt-x"} {
		conn, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "POST /v1.51/containers/%s/attach?stream=1&stdout=1&detachKeys=%s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n", id, keys)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if want := "Invalid detach keys (" + keys + ") provided"; resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("detachKeys=%s: %d %s, want 400 %q", keys, resp.StatusCode, body, want)
		}
	}
	// The SDK tells the status alone.
	_, err := d.Client(t).ContainerAttach(context.Background(), id, client.ContainerAttachOptions{Stream: true, Stdout: true, DetachKeys: "ctrl-A,a"})
	if err == nil || !strings.Contains(err.Error(), "received 400") {
		t.Errorf("SDK attach with bad keys: %v", err)
	}
	if out := dockerOK(t, d, "inspect", "-f", "{{.State.Status}}", id); out != "created" {
		t.Errorf("after refused attaches the container is %s", out)
	}
}

// attachLogsPy attaches with logs=1&stream=0 ten times through docker-py,
// which reads the stream from the socket under its HTTP parser, and prints
// what each attach gave.
const attachLogsPy = `
import docker, sys
c = docker.APIClient(base_url=sys.argv[1], version="1.41")
for _ in range(10):
    print(repr(c.attach(sys.argv[2], stream=False, logs=True)))
`

// logs=1&stream=0 gives the container's output so far and ends, as on
// Docker; logs=1 alone too (stream defaults to false). docker-py gets it
// too, though it loses what comes with the response head.
func TestAttachLogsWithoutStream(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	id := dockerOK(t, d, "run", "-d", ref, "sh", "-c", "echo out; echo err >&2")
	dockerOK(t, d, "wait", id)
	running := dockerOK(t, d, "run", "-d", ref, "sh", "-c", "echo up; exec sleep 300")
	waitFor(t, func() bool { return dockerOK(t, d, "logs", running) == "up" })
	for cid, want := range map[string][]string{id: {`b'out\nerr\n'`, `b'err\nout\n'`}, running: {`b'up\n'`}} {
		out, err := exec.Command("python3", "-c", attachLogsPy, d.Host(), cid).CombinedOutput()
		if err != nil {
			t.Fatalf("docker-py (make test installs python3-docker): %v\n%s", err, out)
		}
		for _, got := range lines(string(out)) {
			if !slices.Contains(want, got) {
				t.Errorf("docker-py attach logs=1 stream=0 of %.12s: %s, want %s", cid, got, want[0])
			}
		}
	}
	for _, tty := range []bool{false, true} {
		if tty {
			id = dockerOK(t, d, "run", "-d", "-t", ref, "echo", "on a tty")
			dockerOK(t, d, "wait", id)
		}
		res, err := c.ContainerAttach(ctx, id, client.ContainerAttachOptions{Logs: true, Stdout: true, Stderr: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var so, se bytes.Buffer
		go func() {
			defer close(done)
			if tty {
				io.Copy(&so, res.Reader)
			} else {
				stdcopy.StdCopy(&so, &se, res.Reader)
			}
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("attach logs=1 did not end (tty %v): %q %q", tty, so.String(), se.String())
		}
		res.Close()
		switch {
		case !tty && (so.String() != "out\n" || se.String() != "err\n"):
			t.Errorf("attach logs=1: stdout %q stderr %q", so.String(), se.String())
		case tty && so.String() != "on a tty\r\n":
			t.Errorf("attach logs=1 on a tty: %q", so.String())
		}
	}
}

// The detach keys on an attached tty's input end the attach; the
// container goes on, and takes a new attach (Docker's escape proxy).
func TestAttachDetachKeys(t *testing.T) {
	d, ref := pulled(t)
	c := d.Client(t)
	ctx := context.Background()
	for _, tc := range []struct{ keys, seq string }{{"", "\x10\x11"}, {"ctrl-x,y", "\x18y"}} {
		t.Run("keys "+tc.keys, func(t *testing.T) {
			cr, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &containertypes.Config{
				Image: ref, Cmd: []string{"sh"}, Tty: true, OpenStdin: true,
			}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ContainerStart(ctx, cr.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
			att, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, DetachKeys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			defer att.Close()
			var got syncBuffer
			ended := make(chan struct{})
			go func() {
				io.Copy(&got, att.Reader)
				close(ended)
			}()
			fmt.Fprintf(att.Conn, "echo $((6*7))\r")
			waitFor(t, func() bool { return strings.Contains(got.String(), "42") })
			att.Conn.Write([]byte(tc.seq))
			select {
			case <-ended:
			case <-time.After(2 * time.Minute):
				t.Fatalf("the detach keys did not end the attach: %q", got.String())
			}
			if st := dockerOK(t, d, "inspect", "-f", "{{.State.Running}}", cr.ID); st != "true" {
				t.Errorf("after detaching the container is running=%s", st)
			}
			// A new attach takes the shell back.
			again, err := c.ContainerAttach(ctx, cr.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			fmt.Fprintf(again.Conn, "echo $((5*5))z; exit 3\r")
			b, _ := io.ReadAll(again.Reader)
			if !strings.Contains(string(b), "25z") {
				t.Errorf("second attach: %q", b)
			}
			if code := dockerOK(t, d, "wait", cr.ID); code != "3" {
				t.Errorf("exit code %s", code)
			}
		})
	}
}
