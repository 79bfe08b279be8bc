package server

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hutch-engine/hutch/engine/shim/wire"
)

// proc holds the stdio of one container process (the init or an exec) and
// fans its output out to the json-file log and to every attached client.
type proc struct {
	tty bool

	// child ends, closed in the shim once the process has started.
	childFiles []*os.File
	// consoleSock receives the pty master from libcontainer's init.
	consoleSock *os.File

	stdinMu sync.Mutex
	stdin   io.WriteCloser // pipe write end or pty master; nil without stdin

	console *os.File // the pty master, for resize
	outputs []output

	mu        sync.Mutex
	attachers map[*attacher]struct{}
	outDone   chan struct{} // closed when every output stream has ended
	ended     bool
}

type output struct {
	r      *os.File
	stream byte
	log    io.WriteCloser // nil when not logged
}

// attacher is one client connection receiving the output.
type attacher struct {
	conn    *os.File
	fw      *wire.FrameWriter
	streams [3]bool
	done    chan struct{}
	once    sync.Once
}

func (a *attacher) close() { a.once.Do(func() { close(a.done) }) }

// newProc prepares stdio for a process: pipes, or a console socket for a
// tty. It returns the process's ends with their roles (wire.FileStdin…),
// for hutch-runtime.
func newProc(tty, openStdin bool) (pr *proc, roles []string, files []*os.File, err error) {
	pr = &proc{tty: tty, attachers: map[*attacher]struct{}{}, outDone: make(chan struct{})}
	if tty {
		parent, child, err := socketPair()
		if err != nil {
			return nil, nil, nil, err
		}
		pr.consoleSock = parent
		pr.childFiles = []*os.File{child}
		return pr, []string{wire.FileConsole}, pr.childFiles, nil
	}
	if openStdin {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, nil, nil, err
		}
		pr.stdin = w
		pr.childFiles = append(pr.childFiles, r)
		roles = append(roles, wire.FileStdin)
	}
	for _, stream := range []byte{wire.StreamStdout, wire.StreamStderr} {
		r, w, err := os.Pipe()
		if err != nil {
			pr.closeAll()
			return nil, nil, nil, err
		}
		role := wire.FileStdout
		if stream == wire.StreamStderr {
			role = wire.FileStderr
		}
		pr.outputs = append(pr.outputs, output{r: r, stream: stream})
		pr.childFiles = append(pr.childFiles, w)
		roles = append(roles, role)
	}
	return pr, roles, pr.childFiles, nil
}

func socketPair() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[1]), "console-parent"), os.NewFile(uintptr(fds[0]), "console-child"), nil
}

// started closes the child's ends and, for a tty, receives the pty master
// that libcontainer's init sent while hutch-runtime created it.
func (pr *proc) started() error {
	for _, f := range pr.childFiles {
		_ = f.Close()
	}
	pr.childFiles = nil
	if !pr.tty {
		return nil
	}
	defer pr.consoleSock.Close()
	master, err := recvFD(pr.consoleSock)
	if err != nil {
		return wire.Wrap("receive the container's pty", err)
	}
	pr.console = master
	pr.stdin = master
	pr.outputs = []output{{r: master, stream: wire.StreamStdout}}
	return nil
}

func recvFD(sock *os.File) (*os.File, error) {
	// The peer is libcontainer's init; it has already sent the fd when
	// Start returns, so a deadline only guards against a broken init.
	_ = sock.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 256)
	oob := make([]byte, unix.CmsgSpace(4))
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	var oobn int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		_, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, rerr
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, errors.New("no file descriptor in console message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, errors.New("no file descriptor in console message")
	}
	// Non-blocking, the master joins the runtime poller: Close then
	// interrupts a pending Read (see finish).
	if err := unix.SetNonblock(fds[0], true); err != nil {
		_ = unix.Close(fds[0])
		return nil, err
	}
	return os.NewFile(uintptr(fds[0]), "pty-master"), nil
}

// closeAll releases everything after a failed start.
func (pr *proc) closeAll() {
	for _, f := range pr.childFiles {
		_ = f.Close()
	}
	for _, o := range pr.outputs {
		_ = o.r.Close()
	}
	if pr.consoleSock != nil {
		_ = pr.consoleSock.Close()
	}
	if pr.stdin != nil {
		_ = pr.stdin.Close()
	}
}

// pump copies every output stream until it ends, then ends the attachers.
func (pr *proc) pump() {
	var wg sync.WaitGroup
	for _, o := range pr.outputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.copyOut(o)
		}()
	}
	go func() {
		wg.Wait()
		pr.mu.Lock()
		pr.ended = true
		for a := range pr.attachers {
			a.close()
		}
		pr.attachers = nil
		pr.mu.Unlock()
		close(pr.outDone)
	}()
}

func (pr *proc) copyOut(o output) {
	buf := getBuf()
	defer putBuf(buf)
	var targets []*attacher
	for {
		n, err := o.r.Read(buf)
		if n > 0 {
			if o.log != nil {
				_, _ = o.log.Write(buf[:n])
			}
			targets = pr.targets(targets[:0], o.stream)
			for _, a := range targets {
				if a.fw.WriteFrame(o.stream, buf[:n]) != nil {
					pr.detach(a)
				}
			}
		}
		if err != nil {
			// EOF on a pipe; EIO on a pty master once the last slave fd
			// is gone.
			if o.log != nil {
				_ = o.log.Close()
			}
			// The read end is the shim's last hold on the pipe: an exec's
			// stays open for as long as its container runs otherwise, two
			// file descriptors and their pipes for each exec (a health
			// check every few seconds).
			_ = o.r.Close()
			return
		}
	}
}

func (pr *proc) targets(dst []*attacher, stream byte) []*attacher {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for a := range pr.attachers {
		if a.streams[stream] {
			dst = append(dst, a)
		}
	}
	return dst
}

// attach registers a client. The response line is written under the frame
// writer's lock and before any frame, and registration happens before the
// client can see the response, so a Start sent after it loses no output.
func (pr *proc) attach(conn *os.File, streams [3]bool, resp *wire.Response) (*attacher, error) {
	a := &attacher{conn: conn, fw: wire.NewFrameWriter(conn), streams: streams, done: make(chan struct{})}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.ended {
		a.close()
	} else {
		pr.attachers[a] = struct{}{}
	}
	// The lock holds the output pumps: a client that does not read its
	// answer must not stall the container for long.
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	err := a.fw.WriteLine(resp)
	_ = conn.SetWriteDeadline(time.Time{})
	if err != nil {
		delete(pr.attachers, a)
		return nil, err
	}
	return a, nil
}

func (pr *proc) detach(a *attacher) {
	pr.mu.Lock()
	delete(pr.attachers, a)
	pr.mu.Unlock()
	a.close()
}

// serveStdin reads the client's frames (stdin data; an empty frame is
// EOF) until the connection ends. ended runs once, at EOF or disconnect.
func (pr *proc) serveStdin(r io.Reader, wantStdin bool, ended func()) {
	var once sync.Once
	defer once.Do(ended)
	buf := getBuf()
	defer putBuf(buf)
	for {
		stream, p, err := wire.ReadFrame(r, buf)
		if err != nil {
			return
		}
		if stream != wire.StreamStdin || !wantStdin {
			continue
		}
		if len(p) == 0 {
			once.Do(ended)
			wantStdin = false
			continue
		}
		if err := pr.writeStdin(p); err != nil {
			wantStdin = false
		}
	}
}

func (pr *proc) writeStdin(p []byte) error {
	pr.stdinMu.Lock()
	defer pr.stdinMu.Unlock()
	if pr.stdin == nil {
		return io.ErrClosedPipe
	}
	_, err := pr.stdin.Write(p)
	return err
}

// closeStdin gives the process EOF on stdin. A pty has no separate input
// end to close; as in Docker, nothing happens then.
func (pr *proc) closeStdin() {
	pr.stdinMu.Lock()
	defer pr.stdinMu.Unlock()
	if pr.tty || pr.stdin == nil {
		return
	}
	_ = pr.stdin.Close()
	pr.stdin = nil
}

func (pr *proc) resize(h, w uint16) error {
	if pr.console == nil {
		return wire.Wrap("not a tty", syscall.ENOTTY)
	}
	rc, err := pr.console.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: h, Col: w})
	}); err != nil {
		return err
	}
	return ierr
}

// finish waits for the output to end after the process exited. Processes
// that escaped the container's pid namespace (or share the host's) may
// hold the pipes open; after grace their output is cut off.
func (pr *proc) finish(grace time.Duration) {
	select {
	case <-pr.outDone:
	case <-time.After(grace):
		for _, o := range pr.outputs {
			_ = o.r.Close()
		}
		<-pr.outDone
	}
	pr.stdinMu.Lock()
	if pr.stdin != nil && !pr.tty {
		_ = pr.stdin.Close()
	}
	pr.stdin = nil
	pr.stdinMu.Unlock()
	if pr.console != nil {
		_ = pr.console.Close()
	}
}

// copyBufs keeps the copy buffers of streams that ended for the next
// ones: an exec's two streams each took 32 KiB, garbage a moment later.
var copyBufs = make(chan []byte, 4)

func getBuf() []byte {
	select {
	case b := <-copyBufs:
		return b
	default:
		return make([]byte, 32*1024)
	}
}

func putBuf(b []byte) {
	select {
	case copyBufs <- b:
	default:
	}
}
