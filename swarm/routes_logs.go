package swarm

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
	gogotypes "github.com/gogo/protobuf/types"
	"github.com/moby/swarmkit/v2/api"
)

// serviceLogs and taskLogs stream SwarmKit's log subscription as Docker
// does: one frame per line, multiplexed (stdout 1, stderr 2) unless the
// service has a TTY, each line led by its details
// (com.docker.swarm.node.id=…,service.id=…,task.id=…) when asked and its
// timestamp when asked.
func (s *server) serviceLogs(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	svc, err := resolveService(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	tty := false
	if c := svc.Spec.Task.GetContainer(); c != nil {
		tty = c.TTY
	}
	return s.streamLogs(w, r, &api.LogSelector{ServiceIDs: []string{svc.ID}}, tty)
}

func (s *server) taskLogs(w http.ResponseWriter, r *http.Request) error {
	ctl, err := s.c.manager()
	if err != nil {
		return err
	}
	t, err := resolveTask(r.Context(), ctl, r.PathValue("id"))
	if err != nil {
		return err
	}
	tty := false
	if c := t.Spec.GetContainer(); c != nil {
		tty = c.TTY
	}
	return s.streamLogs(w, r, &api.LogSelector{TaskIDs: []string{t.ID}}, tty)
}

func (s *server) streamLogs(w http.ResponseWriter, r *http.Request, sel *api.LogSelector, tty bool) error {
	q := r.URL.Query()
	stdout, stderr := boolQuery(r, "stdout"), boolQuery(r, "stderr")
	if !stdout && !stderr {
		return errdefs.ErrInvalidArgument.WithMessage("Bad parameters: you must choose at least one stream")
	}
	opts := &api.LogSubscriptionOptions{Follow: boolQuery(r, "follow")}
	if stdout {
		opts.Streams = append(opts.Streams, api.LogStreamStdout)
	}
	if stderr {
		opts.Streams = append(opts.Streams, api.LogStreamStderr)
	}
	if tail := q.Get("tail"); tail != "" && tail != "all" {
		n, err := strconv.ParseInt(tail, 10, 64)
		if err != nil || n < 0 {
			return errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid value for \"tail\": %q", tail))
		}
		// SwarmKit counts from the end with negative numbers.
		opts.Tail = -n - 1
	}
	if since := q.Get("since"); since != "" {
		ts, err := parseSince(since)
		if err != nil {
			return err
		}
		opts.Since = ts
	}
	lc, err := s.c.logsClient()
	if err != nil {
		return err
	}
	stream, err := lc.SubscribeLogs(r.Context(), &api.SubscribeLogsRequest{Selector: sel, Options: opts})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	if tty {
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	details, timestamps := boolQuery(r, "details"), boolQuery(r, "timestamps")
	for {
		msgs, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			// The status line is sent: the stream just ends.
			s.log.Debug("log subscription ended", "err", err)
			return nil
		}
		for _, m := range msgs.Messages {
			line := logLine(m, details, timestamps)
			if !tty {
				line = frame(m.Stream, line)
			}
			if _, err := w.Write(line); err != nil {
				return nil
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

func logLine(m api.LogMessage, details, timestamps bool) []byte {
	var out []byte
	if details {
		out = fmt.Appendf(out, "com.docker.swarm.node.id=%s,com.docker.swarm.service.id=%s,com.docker.swarm.task.id=%s ",
			m.Context.NodeID, m.Context.ServiceID, m.Context.TaskID)
	}
	if timestamps && m.Timestamp != nil {
		if t, err := gogotypes.TimestampFromProto(m.Timestamp); err == nil {
			out = append(out, t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00")...)
			out = append(out, ' ')
		}
	}
	return append(out, m.Data...)
}

// frame is one frame of Docker's multiplexed stream.
func frame(stream api.LogStream, data []byte) []byte {
	hdr := make([]byte, 8, 8+len(data))
	hdr[0] = 1
	if stream == api.LogStreamStderr {
		hdr[0] = 2
	}
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(data)))
	return append(hdr, data...)
}

// parseSince reads Docker's since: seconds[.nanoseconds] since the epoch,
// as the CLI sends it.
func parseSince(v string) (*gogotypes.Timestamp, error) {
	sec, nsec := v, "0"
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			sec, nsec = v[:i], v[i+1:]
			break
		}
	}
	s, err1 := strconv.ParseInt(sec, 10, 64)
	n, err2 := strconv.ParseInt(nsec, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errdefs.ErrInvalidArgument.WithMessage(fmt.Sprintf("invalid value for \"since\": %q", v))
	}
	return gogotypes.TimestampProto(time.Unix(s, n))
}
