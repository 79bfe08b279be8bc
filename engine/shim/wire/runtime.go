package wire

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The shim does nothing with libcontainer itself: for each step that needs
// it, it starts hutch-runtime ("hutch-runtime call") with RuntimeFD one end
// of a unix stream socket pair, sends one RuntimeRequest (a JSON line, the
// files it names passed along as SCM_RIGHTS), and reads one RuntimeReply
// line; hutch-runtime then exits. A warm shim starts its first one ahead of
// need, so a container's start does not wait for that exec.

// Ops of hutch-runtime.
const (
	// RuntimeCreate creates the bundle's container, its init waiting on
	// libcontainer's exec fifo, with the stdio files sent.
	RuntimeCreate = "create"
	// RuntimeExec starts Process in the running container.
	RuntimeExec = "exec"
	// RuntimePause and RuntimeResume freeze and thaw the container.
	RuntimePause  = "pause"
	RuntimeResume = "resume"
	// RuntimeDelete removes the stopped container (cgroup, hooks, state).
	RuntimeDelete = "delete"
)

// RuntimeFD is the descriptor of hutch-runtime's end of the socket.
const RuntimeFD = 3

// ReadyFD is the descriptor the runtime server ("hutch-runtime serve")
// closes once it listens.
const ReadyFD = 3

// EngineFD is the runtime server's end of a pipe the engine holds open for
// as long as it wants the server to take requests.
const EngineFD = 4

// WarmServed is the last argument of a warm shim ("hutch-shim warm
// RUNTIME served") whose runtime steps the engine's runtime server
// answers: it starts no spare hutch-runtime.
const WarmServed = "served"

// RuntimeStatusPrefix starts the line in which the runtime server sends
// the wait status of a process it made, after its reply, when that
// process has ended.
const RuntimeStatusPrefix = "status "

// ParseRuntimeStatus reads the runtime server's status line.
func ParseRuntimeStatus(line string) (unix.WaitStatus, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), RuntimeStatusPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return unix.WaitStatus(n), err == nil
}

// ReleaseInit lets a created init exec its command, as runc start does:
// the init blocks opening libcontainer's exec fifo for writing until a
// reader opens it, writes a byte, and execs. The fifo is opened
// read-write and non-blocking: the open never waits, our own writer end
// means no EOF before the init's byte, and the wait for it holds no
// thread. ended is closed once the init has ended: it ran and exited
// already (its byte is in the fifo, since with a reader there the init's
// open and write do not wait), or it died before it wrote. The fifo is
// removed once read.
func ReleaseInit(fifo string, ended <-chan struct{}) error {
	f, err := os.OpenFile(fifo, os.O_RDWR|unix.O_NONBLOCK, 0)
	if err != nil {
		return Wrap("exec fifo", err)
	}
	defer f.Close()
	buf := make([]byte, 1)
	got := make(chan error, 1)
	go func() {
		_, err := f.Read(buf)
		got <- err
	}()
	select {
	case err = <-got:
	case <-ended:
		_ = f.SetReadDeadline(time.Now())
		if err = <-got; err != nil {
			// The read may have given up on its deadline before it
			// looked: look once more, without one.
			err = errors.New("container process is already dead")
			_ = f.SetReadDeadline(time.Time{})
			if rc, rerr := f.SyscallConn(); rerr == nil {
				_ = rc.Read(func(fd uintptr) bool {
					if n, _ := unix.Read(int(fd), buf); n == 1 {
						err = nil
					}
					return true
				})
			}
		}
	}
	if err != nil {
		return err
	}
	_ = os.Remove(fifo)
	return nil
}

// Roles of the files sent with a RuntimeRequest.
const (
	// FileLog becomes hutch-runtime's stderr: the bundle's shim.log.
	FileLog = "log"
	// FileStdin, FileStdout and FileStderr are the process's stdio.
	FileStdin  = "stdin"
	FileStdout = "stdout"
	FileStderr = "stderr"
	// FileConsole is libcontainer's console socket: the process sends the
	// master of its new pty there, to the shim.
	FileConsole = "console"
)

// maxRuntimeFiles bounds the files of one request.
const maxRuntimeFiles = 4

// maxRuntimeRequest bounds the line of one request (a process spec is a
// few KiB): the runtime server reads requests from any of the user's
// processes. An exec's request carries the process spec of the shim's
// request (at most MaxLine) and a little more.
const maxRuntimeRequest = MaxLine + 64<<10

// RuntimeRequest is what the shim asks of hutch-runtime.
type RuntimeRequest struct {
	Op     string `json:"op"`
	Bundle string `json:"bundle"`
	// Files names the role of each file passed with the request, in order.
	Files []string `json:"files,omitempty"`
	// Process is the exec's OCI process (specs.Process), as the engine
	// sent it.
	Process RawJSON `json:"process,omitempty"`
}

// RuntimeReply is hutch-runtime's answer: Pid of the process created, or
// the error.
type RuntimeReply struct {
	Response
	// Fifo (create) is libcontainer's exec fifo: the shim opens and reads
	// it to let the init exec the container's command.
	Fifo string `json:"fifo,omitempty"`
	// NeedsDelete (create): the container has a cgroup or hooks, so its
	// removal needs RuntimeDelete; otherwise removing StateDir is all.
	NeedsDelete bool `json:"needsDelete,omitempty"`
	// StateDir (create) is the container's libcontainer state directory.
	StateDir string `json:"stateDir,omitempty"`
	// OOMKilled (delete): the kernel's OOM killer killed a process of the
	// container.
	OOMKilled bool `json:"oomKilled,omitempty"`
}

// SendRuntimeRequest writes req on sock, with files passed alongside; req
// names their roles.
func SendRuntimeRequest(sock *os.File, req *RuntimeRequest, files []*os.File) error {
	if len(files) != len(req.Files) || len(files) > maxRuntimeFiles {
		return errors.New("runtime request: " + strconv.Itoa(len(files)) + " files for roles " + strings.Join(req.Files, ","))
	}
	b, err := req.MarshalJSON()
	if err != nil {
		return err
	}
	b = append(b, '\n')
	fds := make([]int, len(files))
	for i, f := range files {
		// Fd makes a pipe blocking again, as the process it is for
		// expects its stdio (os.Pipe's ends are non-blocking, for the
		// runtime's poller).
		fds[i] = int(f.Fd())
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	// The rights ride on the first bytes; the rest of a long line follows.
	rc, err := sock.SyscallConn()
	if err != nil {
		return err
	}
	n := 0
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		n, serr = unix.SendmsgN(int(fd), b, oob, nil, 0)
		return serr != unix.EAGAIN
	}); err != nil {
		return Wrap("send to hutch-runtime", err)
	}
	if serr != nil {
		return Wrap("send to hutch-runtime", serr)
	}
	// Nothing more to write is no write at all: a runtime that has read
	// the line may already have answered and closed, and a write of
	// nothing to a closed peer fails (EPIPE) as a lost request would.
	if n < len(b) {
		if _, err := sock.Write(b[n:]); err != nil {
			return Wrap("send to hutch-runtime", err)
		}
	}
	return nil
}

// RecvRuntimeRequest reads one request from fd, with its files by role.
// io.EOF means the shim closed the socket without asking anything.
func RecvRuntimeRequest(fd int) (*RuntimeRequest, map[string]*os.File, error) {
	buf := make([]byte, 64*1024)
	oob := make([]byte, unix.CmsgSpace(4*maxRuntimeFiles))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, io.EOF
	}
	var fds []int
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, nil, err
		}
		for i := range msgs {
			got, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				return nil, nil, err
			}
			fds = append(fds, got...)
		}
	}
	closeAll := func() {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	line := buf[:n]
	for line[len(line)-1] != '\n' {
		// The rest of a long line.
		if len(line) >= maxRuntimeRequest {
			closeAll()
			return nil, nil, errors.New("runtime request: longer than " + strconv.Itoa(maxRuntimeRequest) + " bytes")
		}
		if len(line) == cap(line) {
			line = append(line, 0)[:len(line)]
		}
		m, err := unix.Read(fd, line[len(line):cap(line)])
		if err == unix.EINTR {
			continue
		}
		if err == nil && m == 0 {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			closeAll()
			return nil, nil, Wrap("runtime request", err)
		}
		line = line[:len(line)+m]
	}
	var req RuntimeRequest
	if err := req.UnmarshalJSON(line); err != nil {
		closeAll()
		return nil, nil, Wrap("runtime request", err)
	}
	if len(req.Files) != len(fds) {
		closeAll()
		return nil, nil, errors.New("runtime request: " + strconv.Itoa(len(fds)) + " files for roles " + strings.Join(req.Files, ","))
	}
	byRole := make(map[string]*os.File, len(fds))
	for i, role := range req.Files {
		byRole[role] = os.NewFile(uintptr(fds[i]), role)
	}
	return &req, byRole, nil
}
