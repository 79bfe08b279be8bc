package engine

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	eventtypes "github.com/moby/moby/api/types/events"

	"github.com/containerd/errdefs"

	"github.com/hutch-engine/hutch/engine/container"
	"github.com/hutch-engine/hutch/engine/shim"
	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// AttachRequest is POST /containers/{id}/attach.
type AttachRequest struct {
	Stream, Logs, Stdin, Stdout, Stderr bool
	// DetachKeys end the attach of a tty's input, the container going on
	// (Docker's syntax, "ctrl-p,ctrl-q" when empty).
	DetachKeys string
	// Attached, if set, is called once the attach is registered: from
	// then on the container's output reaches the streams.
	Attached func()
}

// ContainerAttach joins the caller's streams to a container: past output
// first when Logs, then live output when Stream until the container ends,
// ctx does, or the detach keys come on a tty's input. A container that is
// not running yet is attached the moment it starts, so that nothing it
// prints is lost (docker run attaches before it starts the container).
// Bad detach keys are refused before anything else, as Docker does.
func (e *Engine) ContainerAttach(ctx context.Context, ref string, req AttachRequest, stdin io.Reader, stdout, stderr io.Writer) error {
	keys, err := parseDetachKeys(req.DetachKeys, "detach")
	if err != nil {
		return err
	}
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if err := c.State.CheckAttach(ref); err != nil {
		return err
	}
	opts := shim.AttachOptions{}
	if req.Stdout {
		opts.Stdout = stdout
	}
	if req.Stderr {
		opts.Stderr = stderr
	}
	if req.Stdin && c.Config.OpenStdin {
		opts.Stdin = stdin
	}
	attached := func() {
		if req.Attached != nil {
			req.Attached()
		}
	}
	if req.Logs {
		attached()
		if err := e.copyLogs(ctx, c, LogsRequest{Stdout: req.Stdout, Stderr: req.Stderr, Tail: "all"}, opts.Stdout, opts.Stderr); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return err
		}
	}
	if !req.Stream {
		attached()
		return nil
	}
	ctx, detach := context.WithCancel(ctx)
	defer detach()
	if opts.Stdin != nil && c.Config.Tty {
		// As Docker, only a tty's input is watched for the keys: other
		// input is data, which may hold any byte.
		opts.Stdin = newEscapeReader(opts.Stdin, keys, detach)
	}
	e.containerEvent(c, eventtypes.ActionAttach, nil)
	a, recorded, err := e.attachLive(ctx, c.ID, opts, attached)
	if err != nil || a == nil {
		return err
	}
	select {
	case <-a.Done():
	case <-ctx.Done():
		a.Close()
		e.containerEvent(c, eventtypes.ActionDetach, nil)
		return nil
	}
	if err := a.Wait(); err != nil {
		// The client went away (a write to it failed): the run goes on,
		// and there is no exit to wait for.
		return err
	}
	// The output ended with the run. As on Docker, whose attach ends as
	// its exit is being handled under the container's lock, the client
	// that sees the end finds the exit recorded and the network released
	// (an inspect for the exit code, a network rm that follows). A process
	// that closed its output and runs on is not waited for past
	// exitRecordWait.
	t := time.NewTimer(exitRecordWait)
	defer t.Stop()
	select {
	case <-recorded:
	case <-ctx.Done():
	case <-t.C:
	}
	return nil
}

// exitRecordWait bounds an attach's wait for the exit of the run whose
// output ended: the shim records the exit within outputGrace and the
// removal of the container after that.
const exitRecordWait = 5 * time.Second

// attachLive attaches to the running shim, or registers to be attached
// when the container starts. recorded is the run's runs.recorded.
func (e *Engine) attachLive(ctx context.Context, id string, opts shim.AttachOptions, attached func()) (a *shim.Attachment, recorded <-chan struct{}, err error) {
	e.runs.mu.Lock()
	if client := e.runs.shims[id]; client != nil {
		recorded = e.runs.recorded[id]
		e.runs.mu.Unlock()
		a, err := client.Attach(ctx, opts)
		if err == nil {
			e.runs.addAttached(id, a)
			attached()
		}
		return a, recorded, err
	}
	p := &pendingAttach{opts: opts, done: make(chan attachResult, 1)}
	e.runs.pending[id] = append(e.runs.pending[id], p)
	e.runs.mu.Unlock()
	attached()
	select {
	case r := <-p.done:
		return r.a, r.recorded, r.err
	case <-ctx.Done():
		e.runs.mu.Lock()
		list := e.runs.pending[id]
		for i, q := range list {
			if q == p {
				e.runs.pending[id] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		e.runs.mu.Unlock()
		// A start may have handed us an attachment meanwhile.
		select {
		case r := <-p.done:
			if r.a != nil {
				r.a.Close()
			}
		default:
		}
		return nil, nil, nil
	}
}

// LogsRequest is GET /containers/{id}/logs.
type LogsRequest struct {
	Stdout, Stderr, Follow, Timestamps bool
	// Details puts each line's attributes before it, as Docker's
	// --details does ("k=v,k2=v2 "): json-file's lines carry those its
	// labels and env options asked for; a line without any gets the
	// separating space alone, as on Docker.
	Details bool
	// Tail is a number of lines; anything else ("all") is all of them.
	Tail string
	// Since and Until are Docker's timestamps: unix seconds (with an
	// optional fraction), RFC 3339, or a duration before now ("10m").
	Since, Until string
	// Begin, when set, is called once the request is found good, before
	// the first line is written: the API answers errors before it with
	// their own status.
	Begin func()
}

// ContainerLogs writes the container's log to stdout and stderr; with
// Follow it goes on until the container stops or ctx ends.
func (e *Engine) ContainerLogs(ctx context.Context, ref string, req LogsRequest, stdout, stderr io.Writer) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	if !req.Stdout && !req.Stderr {
		return errdefs.ErrInvalidArgument.WithMessage("You must choose at least one stream")
	}
	if !req.Stdout {
		stdout = nil
	}
	if !req.Stderr {
		stderr = nil
	}
	err = e.copyLogs(ctx, c, req, stdout, stderr)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil // never started: no log yet
	}
	return err
}

func (e *Engine) copyLogs(ctx context.Context, c *container.Container, req LogsRequest, stdout, stderr io.Writer) error {
	if c.HostConfig.LogConfig.Type == logNone {
		return errLogsNotReadable
	}
	opts := jsonlog.ReadOptions{Tail: tailLines(req.Tail), Gunzip: gunzip}
	now := time.Now()
	var err error
	if opts.Since, err = parseTime(req.Since, now, "since"); err != nil {
		return err
	}
	if opts.Until, err = parseTime(req.Until, now, "until"); err != nil {
		return err
	}
	if req.Follow && c.State.Running() {
		done, err := e.containers.Wait(ctx, c.ID, container.WaitNotRunning)
		if err != nil {
			return err
		}
		stop := make(chan struct{})
		go func() {
			<-done
			close(stop)
		}()
		opts.Follow, opts.Done = true, stop
	}
	if req.Begin != nil {
		req.Begin()
	}
	return jsonlog.Read(ctx, e.logFile(c), opts, func(le jsonlog.Entry) error {
		w := stdout
		if le.Stream == "stderr" {
			w = stderr
		}
		if w == nil {
			return nil
		}
		line := le.Line
		if req.Details {
			line = append(append(logDetails(le.Attrs), ' '), line...)
		}
		if req.Timestamps {
			line = append([]byte(le.Time.UTC().Format(rfc3339NanoFixed)+" "), line...)
		}
		_, err := w.Write(line)
		return err
	})
}

// logDetails is what docker logs --details puts before a line, as Docker's
// API server writes it: the line's attributes, keys sorted, as key=value
// query-escaped and joined by commas (then a space, the caller's).
func logDetails(attrs map[string]string) []byte {
	keys := slices.Sorted(maps.Keys(attrs))
	var b []byte
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, url.QueryEscape(k)...)
		b = append(b, '=')
		b = append(b, url.QueryEscape(attrs[k])...)
	}
	return b
}

// tailLines reads the tail parameter as Docker does: a number of lines,
// anything else ("all", "", "x") all of them (-1), not an error.
func tailLines(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// rfc3339NanoFixed is the stamp of docker logs -t: always nine digits of
// fraction, so that stamps line up (RFC3339Nano drops trailing zeros).
const rfc3339NanoFixed = "2006-01-02T15:04:05.000000000Z07:00"

// parseTime reads Docker's since/until values ("" and "0" mean unset)
// as container.ParseTimestamp, with the logs' message for a bad one.
func parseTime(v string, now time.Time, name string) (time.Time, error) {
	if v == "" || v == "0" {
		return time.Time{}, nil
	}
	t, err := container.ParseTimestamp(v, now)
	if err != nil {
		return time.Time{}, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid value for %q: %q", name, v))
	}
	return t, nil
}

// ContainerResize sets the tty size of a running container.
func (e *Engine) ContainerResize(ctx context.Context, ref string, height, width uint16) error {
	c, err := e.containers.Get(ctx, ref)
	if err != nil {
		return err
	}
	client := e.runs.client(c.ID)
	if client == nil {
		return errdefs.ErrConflict.WithMessage(fmt.Sprintf("Container %s is not running", c.ID))
	}
	if err := client.Resize(ctx, height, width); err != nil {
		return err
	}
	e.containerEvent(c, eventtypes.ActionResize, map[string]string{"height": strconv.Itoa(int(height)), "width": strconv.Itoa(int(width))})
	return nil
}

// gunzip reads the rotated log files compress=true compressed.
func gunzip(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }

// attachDrain bounds how long a container's exit waits for its attached
// clients to be sent the last of its output (Docker waits 2 s too).
const attachDrain = 2 * time.Second

// addAttached keeps a live attachment to id's output, dropping those that
// have ended; none once the container's exit is being recorded (its
// monitor dropped the shim), which would keep it for nothing.
func (r *runs) addAttached(id string, a *shim.Attachment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shims[id] == nil {
		return
	}
	live := slices.DeleteFunc(r.attached[id], func(o *shim.Attachment) bool {
		select {
		case <-o.Done():
			return true
		default:
			return false
		}
	})
	r.attached[id] = append(live, a)
}

// drainAttached waits, up to limit, until every attachment to id's output
// has passed all of it on, and forgets them: a client that attached, then
// waited (docker run, dockerode's run) has the output before the exit.
func (r *runs) drainAttached(id string, limit time.Duration) {
	r.mu.Lock()
	list := r.attached[id]
	delete(r.attached, id)
	r.mu.Unlock()
	if len(list) == 0 {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	for _, a := range list {
		select {
		case <-a.Done():
		case <-t.C:
			return
		}
	}
}
