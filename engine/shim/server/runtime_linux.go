package server

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
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
	if runtimeServer != "" {
		return s.askServer(req, files)
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

// runtimeServer is the socket of a long-lived hutch-runtime serving every
// shim (PROTOTYPE, issue 7), or "".
var runtimeServer = os.Getenv("HUTCH_RUNTIME_SERVER")

// askServer has the runtime server answer req. A created process is the
// server's child: its status comes as a line "status N" on the same
// connection.
func (s *server) askServer(req *wire.RuntimeRequest, files []*os.File) (*wire.RuntimeReply, <-chan unix.WaitStatus, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: runtimeServer}); err != nil {
		_ = unix.Close(fd)
		return nil, nil, wire.Wrap("runtime server", err)
	}
	_ = unix.SetNonblock(fd, true)
	sock := os.NewFile(uintptr(fd), "runtime-server")
	if err := wire.SendRuntimeRequest(sock, req, files); err != nil {
		_ = sock.Close()
		return nil, nil, err
	}
	br := bufio.NewReader(sock)
	var reply wire.RuntimeReply
	if err := wire.ReadJSONLine(br, &reply); err != nil {
		_ = sock.Close()
		return nil, nil, wire.Wrap("runtime server", err)
	}
	if err := reply.Err(); err != nil {
		_ = sock.Close()
		return nil, nil, err
	}
	if reply.Pid == 0 {
		_ = sock.Close()
		return &reply, nil, nil
	}
	ch := make(chan unix.WaitStatus, 1)
	go func() {
		defer sock.Close()
		line, err := br.ReadString('\n')
		ws := unix.WaitStatus(255 << 8)
		if err == nil && strings.HasPrefix(line, "status ") {
			if n, err := strconv.Atoi(strings.TrimSpace(line[len("status "):])); err == nil {
				ws = unix.WaitStatus(n)
			}
		}
		ch <- ws
	}()
	return &reply, ch, nil
}
