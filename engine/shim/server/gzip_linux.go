package server

import (
	"os"

	"github.com/hutch-engine/hutch/engine/shim/jsonlog"
)

// gzipBinaries are where the host's gzip is looked for: every Linux has
// one, and running it keeps a compressor (and its tables) out of every
// shim's memory, which only a rotation with compress=true needs.
var gzipBinaries = []string{"/usr/bin/gzip", "/bin/gzip"}

// gzipLog replaces the rotated log p by p.gz, compressed by gzip (its
// fastest level, as log rotation wants): written to a temporary file, then
// renamed over. Without gzip, or if it fails, p stays uncompressed, which
// docker logs reads as well.
func (s *server) gzipLog(p string) {
	bin := ""
	for _, b := range gzipBinaries {
		if _, err := os.Stat(b); err == nil {
			bin = b
			break
		}
	}
	if bin == "" {
		return
	}
	in, err := os.Open(p)
	if err != nil {
		return
	}
	defer in.Close()
	gz := jsonlog.Gunzipped(p)
	tmp := gz + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return
	}
	_, exited, err := s.reaper.spawn(func() (int, error) {
		proc, err := os.StartProcess(bin, []string{bin, "-1", "-n", "-c"}, &os.ProcAttr{Files: []*os.File{in, out, nil}})
		if err != nil {
			return 0, err
		}
		pid := proc.Pid
		_ = proc.Release() // the reaper waits for it
		return pid, nil
	}, 0)
	out.Close()
	ok := err == nil
	if ok {
		ws := <-exited
		ok = ws.Exited() && ws.ExitStatus() == 0
	}
	if ok && os.Rename(tmp, gz) == nil {
		os.Remove(p)
		return
	}
	s.log.warn("compressing a rotated log", "file", p)
	os.Remove(tmp)
}
