package executor

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"time"

	gogotypes "github.com/gogo/protobuf/types"
	"github.com/moby/moby/client"
	"github.com/moby/swarmkit/v2/agent/exec"
	"github.com/moby/swarmkit/v2/api"
)

// Logs publishes the container's log for `docker service logs`: the
// engine's log stream with timestamps, one message per line.
func (c *controller) Logs(ctx context.Context, publisher exec.LogPublisher, opts api.LogSubscriptionOptions) error {
	st, err := c.inspect(ctx)
	if err != nil {
		return err
	}
	lo := client.ContainerLogsOptions{Follow: opts.Follow, Timestamps: true}
	for _, s := range opts.Streams {
		switch s {
		case api.LogStreamStdout:
			lo.ShowStdout = true
		case api.LogStreamStderr:
			lo.ShowStderr = true
		}
	}
	if len(opts.Streams) == 0 {
		lo.ShowStdout, lo.ShowStderr = true, true
	}
	if opts.Tail < 0 {
		lo.Tail = strconv.FormatInt(-opts.Tail-1, 10)
	} else {
		lo.Tail = "all"
	}
	if opts.Since != nil {
		lo.Since = fmt.Sprintf("%d.%09d", opts.Since.Seconds, opts.Since.Nanos)
	}
	rc, err := c.e.client.ContainerLogs(ctx, c.name, lo)
	if err != nil {
		return err
	}
	defer rc.Close()
	t := c.current()
	lctx := api.LogContext{NodeID: t.NodeID, ServiceID: t.ServiceID, TaskID: t.ID}
	publish := func(stream api.LogStream, line []byte) error {
		ts, data := splitTimestamp(line)
		msg := api.LogMessage{Context: lctx, Stream: stream, Data: data}
		if pts, err := gogotypes.TimestampProto(ts); err == nil {
			msg.Timestamp = pts
		}
		return publisher.Publish(ctx, msg)
	}
	if st.Config != nil && st.Config.Tty {
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			if err := publish(api.LogStreamStdout, append(sc.Bytes(), '\n')); err != nil {
				return err
			}
		}
		return sc.Err()
	}
	return demux(rc, func(stream byte, frame []byte) error {
		s := api.LogStreamStdout
		if stream == 2 {
			s = api.LogStreamStderr
		}
		return publish(s, frame)
	})
}

// demux reads the engine's multiplexed stream: an 8-byte header (stream,
// three zero bytes, big-endian length) before each frame.
func demux(r io.Reader, f func(stream byte, frame []byte) error) error {
	br := bufio.NewReader(r)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[4:])
		if n > 16<<20 {
			return fmt.Errorf("log frame of %d bytes", n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, frame); err != nil {
			return err
		}
		if err := f(hdr[0], frame); err != nil {
			return err
		}
	}
}

// splitTimestamp takes the RFC 3339 timestamp the engine puts before each
// line off it.
func splitTimestamp(line []byte) (time.Time, []byte) {
	for i, b := range line {
		if b == ' ' {
			if ts, err := time.Parse(time.RFC3339Nano, string(line[:i])); err == nil {
				return ts, line[i+1:]
			}
			break
		}
	}
	return time.Now(), line
}
