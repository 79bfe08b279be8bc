// Package idle watches what keeps a daemon busy: the API connections it
// has open (requests, keep-alive connections, attach, exec and event
// streams, BuildKit sessions) and whatever its Busy function reports
// (running containers). It decides when the daemon has been idle long
// enough to exit (socket activation starts it again), and gives the Go
// heap a burst left behind back to the kernel once the API goes quiet.
package idle

import (
	"context"
	"errors"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrIdle ends the Accept of a Tracker's listener when the daemon has
// been idle for the idle-exit time: the server stops there.
var ErrIdle = errors.New("idle: exiting")

// Busy reports whether the daemon has work that outlives any connection
// (a running, paused or restarting container).
type Busy func(ctx context.Context) bool

// Options configure a Tracker.
type Options struct {
	// Exit is how long the daemon stays idle before it exits; 0 never.
	Exit time.Duration
	// Busy is consulted whenever no connection is open; nil is never busy.
	Busy Busy
	// Quiet is how long the API must be quiet (no connection opened,
	// read from or closed) before memory is returned; 0 never. Open
	// connections with nothing on them (a client's keep-alive, a
	// stream) do not keep it from being quiet.
	Quiet time.Duration
	// Tick is how often the tracker looks (default: Exit/10, between
	// 100ms and 5s; 5s without Exit).
	Tick time.Duration
	// OnRelease, when set, is told how long each return of memory took.
	OnRelease func(took time.Duration)
}

// Tracker counts connections and decides when the daemon is idle.
type Tracker struct {
	opts Options

	mu    sync.Mutex
	conns int
	// idleSince is when the daemon was last seen busy (a connection or
	// Busy).
	idleSince time.Time
	// active is when (unix nanoseconds) a connection last opened, read
	// or closed; released is when memory was last returned.
	active, released atomic.Int64
	// due is set by Run when the idle time has passed: the Accept that
	// sees it decides, with no connection in flight.
	due chan struct{}
}

// New returns a Tracker; the daemon counts as busy from now on.
func New(o Options) *Tracker {
	if o.Tick == 0 {
		o.Tick = 5 * time.Second
		if o.Exit > 0 {
			o.Tick = min(max(o.Exit/10, 100*time.Millisecond), o.Tick)
		}
	}
	t := &Tracker{opts: o, idleSince: time.Now(), due: make(chan struct{}, 1)}
	t.touch()
	return t
}

// Conns is the number of connections open now.
func (t *Tracker) Conns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns
}

// touch records activity on the API.
func (t *Tracker) touch() { t.active.Store(time.Now().UnixNano()) }

func (t *Tracker) opened() {
	t.touch()
	t.mu.Lock()
	t.conns++
	t.mu.Unlock()
}

func (t *Tracker) closed() {
	t.touch()
	t.mu.Lock()
	t.conns--
	t.idleSince = time.Now()
	t.mu.Unlock()
}

// Run looks at the daemon every tick until ctx ends: it returns memory
// after a quiet spell and, once the daemon has been idle for Exit, wakes
// the listener's Accept (which decides and ends with ErrIdle).
func (t *Tracker) Run(ctx context.Context, wake func()) {
	tick := time.NewTicker(t.opts.Tick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t.release()
		if t.opts.Exit == 0 {
			continue
		}
		t.mu.Lock()
		conns, since := t.conns, t.idleSince
		t.mu.Unlock()
		if conns > 0 || t.busy(ctx) {
			t.mu.Lock()
			t.idleSince = time.Now()
			t.mu.Unlock()
			continue
		}
		if time.Since(since) >= t.opts.Exit {
			select {
			case t.due <- struct{}{}:
			default:
			}
			wake()
		}
	}
}

func (t *Tracker) busy(ctx context.Context) bool {
	return t.opts.Busy != nil && t.opts.Busy(ctx)
}

// release returns the heap's free pages to the kernel once per quiet
// spell. The runtime's own scavenger keeps a share above the heap goal,
// and the forced collection every two minutes does not come for a
// daemon that allocates nothing: without this an idle engine keeps the
// peak of the last burst.
func (t *Tracker) release() {
	if t.opts.Quiet == 0 {
		return
	}
	active := t.active.Load()
	if t.released.Load() > active || time.Since(time.Unix(0, active)) < t.opts.Quiet {
		return
	}
	start := time.Now()
	t.released.Store(start.UnixNano())
	debug.FreeOSMemory()
	if t.opts.OnRelease != nil {
		t.opts.OnRelease(time.Since(start))
	}
}

// exitNow decides, in the accepting goroutine, whether the daemon exits:
// no connection is open and none can open meanwhile (only this
// goroutine accepts), and Busy says no.
func (t *Tracker) exitNow(ctx context.Context) bool {
	t.mu.Lock()
	conns := t.conns
	t.mu.Unlock()
	if conns > 0 || t.busy(ctx) {
		t.mu.Lock()
		t.idleSince = time.Now()
		t.mu.Unlock()
		return false
	}
	return true
}

// deadliner is a listener whose Accept can be woken without closing it
// (*net.UnixListener, *net.TCPListener).
type deadliner interface {
	net.Listener
	SetDeadline(time.Time) error
}

// Listener counts l's connections. With exit set (one listener of the
// daemon's), its Accept also ends the daemon: when Run finds the daemon
// idle it wakes the Accept (a deadline in the past), which checks again
// and returns ErrIdle, or goes on accepting. Deciding where connections
// are accepted is what keeps an idle exit from racing a new client: a
// connection that is not accepted stays queued in the socket, which
// systemd keeps, for the next start.
func (t *Tracker) Listener(ctx context.Context, l net.Listener, exit bool) (net.Listener, func()) {
	tl := &listener{Listener: l, t: t, ctx: ctx}
	wake := func() {}
	if d, ok := l.(deadliner); ok && exit {
		tl.exit = d
		wake = func() { d.SetDeadline(time.Now()) }
	}
	return tl, wake
}

type listener struct {
	net.Listener
	t    *Tracker
	ctx  context.Context
	exit deadliner
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			l.t.opened()
			return &conn{Conn: c, t: l.t}, nil
		}
		var ne net.Error
		if l.exit == nil || !errors.As(err, &ne) || !ne.Timeout() {
			return nil, err
		}
		select {
		case <-l.t.due:
		default:
			// A stale wake-up: the idle time was reset meanwhile.
			l.exit.SetDeadline(time.Time{})
			continue
		}
		if l.t.exitNow(l.ctx) {
			return nil, ErrIdle
		}
		l.exit.SetDeadline(time.Time{})
	}
}

type conn struct {
	net.Conn
	t    *Tracker
	once sync.Once
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.t.touch()
	}
	return n, err
}

// NetConn is the connection tracked, as tls.Conn's NetConn is: a handler
// that hands the descriptor over finds it.
func (c *conn) NetConn() net.Conn { return c.Conn }

// CloseWrite half-closes the connection where its socket can: a hijacked
// stream (attach, exec) ends its output so, and the client reads to EOF
// while the server still drains what it sends.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.t.closed)
	return err
}

// UnixSocket is the unix socket under c and the wrappers that track it
// (NetConn, as tls.Conn has), or nil: for the handlers that use the
// socket itself (its descriptor, its send queue).
func UnixSocket(c net.Conn) *net.UnixConn {
	for {
		switch v := c.(type) {
		case *net.UnixConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
}
