package server

import (
	"bufio"
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// runtimeProc is a started hutch-runtime waiting for its one request.
type runtimeProc struct {
	sock *os.File
}

func (r *runtimeProc) close() { _ = r.sock.Close() }

// runtimeEnv is hutch-runtime's environment: the shim's, with one P
// (wire.OneP).
var runtimeEnv = wire.OneP(os.Environ())

// runtimeSettle is how long hutch-runtime is left unreaped after it exits
// (reaper.spawn tells why).
const runtimeSettle = 20 * time.Millisecond

// startRuntime starts "hutch-runtime call" with its end of a socket pair
// as wire.RuntimeFD.
func (s *server) startRuntime() (*runtimeProc, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	// Ours through the runtime's poller: a read that waits holds no
	// thread (each thread is resident memory, DESIGN §7).
	_ = unix.SetNonblock(fds[0], true)
	ours, theirs := os.NewFile(uintptr(fds[0]), "runtime"), os.NewFile(uintptr(fds[1]), "shim")
	defer theirs.Close()
	_, exited, err := s.reaper.spawn(func() (int, error) {
		p, err := os.StartProcess(s.runtimeBin, []string{s.runtimeBin, "call"}, &os.ProcAttr{
			Env:   runtimeEnv,
			Files: []*os.File{os.Stdin, os.Stderr, os.Stderr, theirs},
		})
		if err != nil {
			return 0, err
		}
		pid := p.Pid
		_ = p.Release() // the reaper waits for it
		return pid, nil
	}, runtimeSettle)
	if err != nil {
		_ = ours.Close()
		return nil, wire.Wrap("start hutch-runtime", err)
	}
	s.runtimes.Add(1)
	go func() {
		<-exited
		s.runtimes.Done()
	}()
	return &runtimeProc{sock: ours}, nil
}

// runtime has hutch-runtime answer req, with files (whose roles req.Files
// names) passed to it. When the reply names a process (create, exec), the
// process is registered with the reaper before hutch-runtime can exit and
// hand it over, and its status comes on the channel returned.
func (s *server) runtime(req *wire.RuntimeRequest, files []*os.File) (*wire.RuntimeReply, <-chan unix.WaitStatus, error) {
	// hutch-runtime logs to the shim's own stderr, the bundle's shim.log.
	req.Files = append([]string{wire.FileLog}, req.Files...)
	files = append([]*os.File{os.Stderr}, files...)
	rp := s.takeSpare()
	fresh := rp == nil
	for {
		if rp == nil {
			var err error
			if rp, err = s.startRuntime(); err != nil {
				return nil, nil, err
			}
		}
		reply, exited, err := s.ask(rp, req, files)
		rp.close()
		if err != nil && errors.Is(err, errNoAnswer) && !fresh {
			// A spare started long ago may have died meanwhile.
			s.log.warn("spare hutch-runtime gone; starting another", "err", err.Error())
			rp, fresh = nil, true
			continue
		}
		return reply, exited, err
	}
}

func (s *server) takeSpare() *runtimeProc {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	rp := s.spare
	s.spare = nil
	return rp
}

// errNoAnswer: hutch-runtime ended without answering.
var errNoAnswer = errors.New("hutch-runtime exited without an answer (see shim.log)")

func (s *server) ask(rp *runtimeProc, req *wire.RuntimeRequest, files []*os.File) (*wire.RuntimeReply, <-chan unix.WaitStatus, error) {
	var reply wire.RuntimeReply
	_, exited, err := s.reaper.spawn(func() (int, error) {
		if err := wire.SendRuntimeRequest(rp.sock, req, files); err != nil {
			return 0, wire.Wrap(err.Error(), errNoAnswer)
		}
		if err := wire.ReadJSONLine(bufio.NewReader(rp.sock), &reply); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, unix.ECONNRESET) {
				// Gone: a reset when it died with the request unread.
				return 0, errNoAnswer
			}
			return 0, wire.Wrap("hutch-runtime", err)
		}
		if err := reply.Err(); err != nil {
			return 0, err
		}
		return reply.Pid, nil
	}, 0)
	if err != nil {
		return nil, nil, err
	}
	return &reply, exited, nil
}
