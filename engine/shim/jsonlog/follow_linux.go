package jsonlog

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// watchFile calls poke whenever path is written, until unwatch is called.
func watchFile(path string, poke func()) (unwatch func(), ok bool) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, false
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY|unix.IN_CLOSE_WRITE); err != nil {
		_ = unix.Close(fd)
		return nil, false
	}
	// A rotation renames path and creates a new one: the directory tells.
	_, _ = unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO)
	// A non-blocking fd given to os.NewFile joins the runtime poller, so
	// Close unblocks the pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			poke()
		}
	}()
	return func() { _ = f.Close() }, true
}
