package inroot

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// swapper exchanges two names of dir (renameat2 RENAME_EXCHANGE) until
// stopped: a directory and a symlink, or a directory in and out of the
// root.
func swapper(t *testing.T, olddir, oldname, newdir, newname string) (stop func()) {
	t.Helper()
	od, err := unix.Open(olddir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	nd, err := unix.Open(newdir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			unix.Renameat2(od, oldname, nd, newname, unix.RENAME_EXCHANGE)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		unix.Close(od)
		unix.Close(nd)
	}
}

// raceRounds is how many lookups each race test makes while the swapper
// runs; enough for the swap to land inside many of them.
const raceRounds = 3000

// A directory swapped with a symlink to the host's directory (absolute,
// and as a ".." chain) while names under it are opened, created, made,
// removed and walked: nothing outside the root is read or written.
func TestSymlinkSwapRace(t *testing.T) {
	modes(t, func(t *testing.T) {
		for _, target := range []string{"", "../../../../../../../../../.."} {
			tr := newTree(t)
			must(t, os.MkdirAll(filepath.Join(tr.root, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(tr.root, "d/secret"), []byte("inside"), 0o644))
			tr.link(t, "swap", target+tr.outside)
			r := tr.open(t)
			stop := swapper(t, tr.root, "d", tr.root, "swap")
			for i := range raceRounds {
				if f, err := r.Open("d/secret", unix.O_RDONLY, 0); err == nil {
					b, _ := io.ReadAll(f)
					inside(t, tr.root, int(f.Fd()), "d/secret")
					f.Close()
					if string(b) == secretText {
						t.Fatalf("round %d: read the sentinel through the swapped link", i)
					}
				}
				switch i % 4 {
				case 0:
					if f, err := r.Open("d/created", unix.O_WRONLY|unix.O_CREAT, 0o644); err == nil {
						f.Close()
					}
				case 1:
					if fd, err := r.MkdirAll("d/newdir/sub", 0o755, i%8 == 1); err == nil {
						unix.Close(fd)
					}
				case 2:
					r.RemoveAll("d/created")
					r.RemoveAll("d/newdir")
				case 3:
					r.Walk("d", func(dir int, name, rel string, st *unix.Stat_t) error {
						if st.Mode&unix.S_IFMT != unix.S_IFREG {
							return nil
						}
						fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
						if err != nil {
							return nil
						}
						defer unix.Close(fd)
						inside(t, tr.root, fd, "walked "+rel)
						return nil
					})
				}
			}
			stop()
			tr.unchanged(t)
		}
	})
}

// A directory moved out of the root and back while a lookup climbs out
// of it with "..": the lookup never reaches the outside.
func TestRenameOutRace(t *testing.T) {
	modes(t, func(t *testing.T) {
		tr := newTree(t)
		must(t, os.MkdirAll(filepath.Join(tr.root, "a/b/c"), 0o755))
		must(t, os.MkdirAll(filepath.Join(tr.outside, "parked"), 0o755))
		r := tr.open(t)
		// b goes to outside/parked/b and back (the empty name there is
		// made by the exchange's first half).
		must(t, os.Mkdir(filepath.Join(tr.outside, "parked/b"), 0o755))
		stop := swapper(t, filepath.Join(tr.root, "a"), "b", filepath.Join(tr.outside, "parked"), "b")
		escaped := 0
		for range raceRounds {
			f, err := r.Open("a/b/c/../../../../outside/secret", unix.O_RDONLY, 0)
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) == secretText {
					escaped++
				}
			} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EAGAIN) {
				t.Errorf("climbing out: %v", err)
				break
			}
		}
		stop()
		if escaped > 0 {
			t.Errorf("read the sentinel %d times through a directory moved out", escaped)
		}
	})
}
