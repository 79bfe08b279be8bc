package server

import (
	"bufio"
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/pidfd"
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
	// thread (each thread is resident memory, docs/design.md, Performance goals).
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
	if s.cfg != nil && s.cfg.RuntimeServer != "" {
		if reply, exited, ok, err := s.askServer(req, files); ok {
			return reply, exited, err
		}
	}
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

// askServer has the engine's runtime server answer req; ok is false when
// none answers the socket (the caller starts a runtime of its own). A
// process it made is the server's child: its status comes on the same
// connection as a line after the reply.
func (s *server) askServer(req *wire.RuntimeRequest, files []*os.File) (reply *wire.RuntimeReply, exited <-chan unix.WaitStatus, ok bool, err error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, false, nil
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: s.cfg.RuntimeServer}); err != nil {
		_ = unix.Close(fd)
		s.log.warn("runtime server not answering; starting hutch-runtime", "err", err.Error())
		return nil, nil, false, nil
	}
	// Through the runtime's poller: a read that waits holds no thread.
	_ = unix.SetNonblock(fd, true)
	sock := os.NewFile(uintptr(fd), "runtime-server")
	// A server that stops (idle, or its engine gone) closes its listener
	// and answers every connection it accepted; one still queued is reset
	// unread (ECONNRESET, or EPIPE on the send): the request was not
	// read, so a runtime of our own makes it. A server that read it and
	// died gives EOF: the step may have been done, and must not be done
	// twice.
	br := bufio.NewReader(sock)
	reply = new(wire.RuntimeReply)
	err = wire.SendRuntimeRequest(sock, req, files)
	if err == nil {
		err = wire.ReadJSONLine(br, reply)
	}
	if err != nil {
		_ = sock.Close()
		if errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE) {
			s.log.warn("runtime server stopping; starting hutch-runtime", "err", err.Error())
			return nil, nil, false, nil
		}
		return nil, nil, true, wire.Wrap("runtime server", err)
	}
	if err := reply.Err(); err != nil || reply.Pid == 0 {
		_ = sock.Close()
		return reply, nil, true, err
	}
	// A pidfd now, while the process cannot have been reaped (the server
	// reaps it only after its status line is due): if the server dies,
	// the status is asked of the kernel.
	pf, _ := pidfd.Open(reply.Pid)
	ch := make(chan unix.WaitStatus, 1)
	go func() {
		defer sock.Close()
		line, err := br.ReadString('\n')
		if ws, ok := wire.ParseRuntimeStatus(line); err == nil && ok {
			if pf != nil {
				_ = pf.Close()
			}
			ch <- ws
			return
		}
		s.log.warn("runtime server gone before the process ended", "pid", itoa(reply.Pid))
		ch <- exitOfPidfd(pf)
	}()
	return reply, ch, true, nil
}

// exitOfPidfd waits for the process of pf, which is not our child, to
// end and asks the kernel how it ended (pidfd.Exit), and closes pf. Where
// the kernel cannot tell, or without pf (nil), the status is exit code
// 255, Docker's unknown.
func exitOfPidfd(pf *os.File) unix.WaitStatus {
	if pf == nil {
		return unix.WaitStatus(255 << 8)
	}
	defer pf.Close()
	if ws, ok := pidfd.Exit(pf); ok {
		return ws
	}
	return unix.WaitStatus(255 << 8)
}
