package jsonlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

// clock returns times one second apart from t0.
func clock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n-1) * time.Second)
	}
}

func newTestLog(t *testing.T) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "json.log")
	w, err := OpenWriter(path, Rotation{})
	if err != nil {
		t.Fatal(err)
	}
	w.now = clock()
	t.Cleanup(func() { _ = w.Close() })
	return w, path
}

func readAll(t *testing.T, path string, opts ReadOptions) []string {
	t.Helper()
	var out []string
	err := Read(context.Background(), path, opts, func(e Entry) error {
		out = append(out, e.Stream+":"+string(e.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLogWriterFormat(t *testing.T) {
	w, path := newTestLog(t)
	out, serr := w.Stream("stdout"), w.Stream("stderr")
	for _, write := range []struct {
		s *logStream
		p string
	}{
		{out.(*logStream), "hello\n"},
		{serr.(*logStream), "oops <&> \"q\"\n"},
		{out.(*logStream), "part"},
		{out.(*logStream), "ial\nnext\nunfinished"},
	} {
		if _, err := write.s.Write([]byte(write.p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"log":"hello\n","stream":"stdout","time":"2026-01-02T03:04:05.123456789Z"}
{"log":"oops \u003c\u0026\u003e \"q\"\n","stream":"stderr","time":"2026-01-02T03:04:06.123456789Z"}
{"log":"partial\n","stream":"stdout","time":"2026-01-02T03:04:07.123456789Z"}
{"log":"next\n","stream":"stdout","time":"2026-01-02T03:04:08.123456789Z"}
{"log":"unfinished","stream":"stdout","time":"2026-01-02T03:04:09.123456789Z"}
`
	if string(b) != want {
		t.Errorf("log file:\n%s\nwant:\n%s", b, want)
	}
}

// Attributes go between stream and time, keys sorted, as Docker's
// json-file writes them, and are read back with their line.
func TestLogWriterAttrs(t *testing.T) {
	w, path := newTestLog(t)
	w.SetAttrs(map[string]string{"service": "web", "env": "a=b <c>"})
	out := w.Stream("stdout")
	if _, err := out.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	w.SetAttrs(nil)
	if _, err := out.Write([]byte("bare\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"log":"hello\n","stream":"stdout","attrs":{"env":"a=b \u003cc\u003e","service":"web"},"time":"2026-01-02T03:04:05.123456789Z"}
{"log":"bare\n","stream":"stdout","time":"2026-01-02T03:04:06.123456789Z"}
`
	if string(b) != want {
		t.Errorf("log file:\n%s\nwant:\n%s", b, want)
	}
	var got []map[string]string
	err = Read(context.Background(), path, ReadOptions{Tail: -1}, func(e Entry) error {
		got = append(got, e.Attrs)
		return nil
	})
	if err != nil || len(got) != 2 || got[0]["env"] != "a=b <c>" || got[0]["service"] != "web" || len(got[0]) != 2 || got[1] != nil {
		t.Errorf("attrs read back: %v, %v", got, err)
	}
}

func TestLogWriterLongLines(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []int // message lengths
	}{
		{"exactly the limit with newline", strings.Repeat("a", maxLogLine-1) + "\n", []int{maxLogLine}},
		{"one over", strings.Repeat("a", maxLogLine) + "\n", []int{maxLogLine, 1}},
		{"two and a half", strings.Repeat("a", 2*maxLogLine+10) + "\n", []int{maxLogLine, maxLogLine, 11}},
		{"no newline", strings.Repeat("a", maxLogLine+5), []int{maxLogLine, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, path := newTestLog(t)
			s := w.Stream("stdout")
			// Written in small pieces, as pipes deliver it.
			for in := tc.input; in != ""; {
				n := min(len(in), 1000)
				if _, err := s.Write([]byte(in[:n])); err != nil {
					t.Fatal(err)
				}
				in = in[n:]
			}
			_ = s.Close()
			var got []int
			var joined strings.Builder
			_ = Read(context.Background(), path, ReadOptions{Tail: -1}, func(e Entry) error {
				got = append(got, len(e.Line))
				joined.Write(e.Line)
				return nil
			})
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || joined.String() != tc.input {
				t.Errorf("message lengths %v, want %v (content kept: %v)", got, tc.want, joined.String() == tc.input)
			}
		})
	}
}

func TestReadLogSelect(t *testing.T) {
	w, path := newTestLog(t)
	s := w.Stream("stdout")
	for i := range 5 {
		fmt.Fprintf(s, "line%d\n", i) // line i at t0+i s
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	lines := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, fmt.Sprintf("stdout:line%d\n", i))
		}
		return out
	}
	tests := []struct {
		name string
		opts ReadOptions
		want []string
	}{
		{"all", ReadOptions{Tail: -1}, lines(0, 1, 2, 3, 4)},
		{"tail 0", ReadOptions{Tail: 0}, nil},
		{"tail 2", ReadOptions{Tail: 2}, lines(3, 4)},
		{"tail more than there is", ReadOptions{Tail: 10}, lines(0, 1, 2, 3, 4)},
		{"since", ReadOptions{Tail: -1, Since: at(3)}, lines(3, 4)},
		{"until (inclusive)", ReadOptions{Tail: -1, Until: at(1)}, lines(0, 1)},
		{"since and until", ReadOptions{Tail: -1, Since: at(1), Until: at(2)}, lines(1, 2)},
		{"tail then since", ReadOptions{Tail: 3, Since: at(3)}, lines(3, 4)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readAll(t, path, tc.opts); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTailAcrossChunks(t *testing.T) {
	w, path := newTestLog(t)
	s := w.Stream("stdout")
	// Lines long enough that the backwards scan crosses chunk borders.
	for i := range 200 {
		fmt.Fprintf(s, "%03d %s\n", i, strings.Repeat("x", 500))
	}
	for _, n := range []int{1, 63, 64, 65, 199, 200, 201} {
		got := readAll(t, path, ReadOptions{Tail: n})
		want := min(n, 200)
		if len(got) != want || !strings.HasPrefix(got[0], fmt.Sprintf("stdout:%03d ", 200-want)) {
			t.Errorf("tail %d: %d lines starting %.12q", n, len(got), got[0])
		}
	}
}

func TestReadLogFollow(t *testing.T) {
	w, path := newTestLog(t)
	s := w.Stream("stdout")
	fmt.Fprint(s, "before\n")
	done := make(chan struct{})
	got := make(chan string, 10)
	errc := make(chan error, 1)
	go func() {
		errc <- Read(context.Background(), path, ReadOptions{Tail: -1, Follow: true, Done: done}, func(e Entry) error {
			got <- string(e.Line)
			return nil
		})
	}()
	next := func() string {
		select {
		case l := <-got:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("follow delivered nothing")
			return ""
		}
	}
	if l := next(); l != "before\n" {
		t.Fatalf("got %q", l)
	}
	fmt.Fprint(s, "after\n")
	if l := next(); l != "after\n" {
		t.Fatalf("got %q", l)
	}
	// The writer's last words come before Done and must not be lost.
	fmt.Fprint(s, "last\n")
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "last\n" {
		t.Fatalf("got %q", l)
	}
}

func TestReadLogFollowPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "json.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := `{"log":"whole\n","stream":"stdout","time":"2026-01-02T03:04:05Z"}` + "\n"
	// A reader may see a line half written.
	if _, err := f.WriteString(line[:20]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 2)
	go func() {
		_ = Read(ctx, path, ReadOptions{Tail: -1, Follow: true}, func(e Entry) error {
			got <- string(e.Line)
			return nil
		})
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := f.WriteString(line[20:]); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-got:
		if l != "whole\n" {
			t.Errorf("got %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the completed line was not delivered")
	}
}

func TestReadLogCancel(t *testing.T) {
	_, path := newTestLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Read(ctx, path, ReadOptions{Tail: -1, Follow: true}, func(Entry) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want canceled", err)
	}
}

func TestReadLogErrors(t *testing.T) {
	err := Read(context.Background(), filepath.Join(t.TempDir(), "none"), ReadOptions{Tail: -1}, func(Entry) error { return nil })
	if !errdefs.IsNotFound(err) {
		t.Errorf("missing log: %v, want not found", err)
	}
	w, path := newTestLog(t)
	fmt.Fprint(w.Stream("stdout"), "a\nb\n")
	stop := errors.New("stop")
	n := 0
	err = Read(context.Background(), path, ReadOptions{Tail: -1}, func(Entry) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("callback error: %v after %d entries", err, n)
	}
}

func FuzzReadLog(f *testing.F) {
	f.Add([]byte(`{"log":"a\n","stream":"stdout","time":"2026-01-02T03:04:05Z"}` + "\n"))
	f.Add([]byte("{\n}\n\n\x00garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "json.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tail := range []int{-1, 0, 1, 3} {
			err := Read(context.Background(), path, ReadOptions{Tail: tail}, func(Entry) error { return nil })
			if err != nil {
				t.Fatalf("tail %d: %v", tail, err)
			}
		}
	})
}

func TestLogRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c-json.log")
	w, err := OpenWriter(path, Rotation{MaxSize: 300, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := w.Stream("stdout")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(out, "line %02d\n", i)
	}
	out.Close()
	w.Close()
	for _, p := range []string{path, path + ".1", path + ".2"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 300 {
			t.Errorf("%s: %v %v (max-size 300)", p, st, err)
		}
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Errorf("max-file 3 kept a fourth file: %v", err)
	}
	var got []string
	Read(context.Background(), path, ReadOptions{Tail: -1}, func(e Entry) error {
		got = append(got, strings.TrimSpace(string(e.Line)))
		return nil
	})
	if len(got) == 0 || got[len(got)-1] != "line 39" {
		t.Fatalf("read across rotated files: %v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Errorf("out of order: %v", got)
			break
		}
	}
	// A tail longer than the current file reaches into the rotated ones.
	var tail []string
	Read(context.Background(), path, ReadOptions{Tail: 7}, func(e Entry) error {
		tail = append(tail, strings.TrimSpace(string(e.Line)))
		return nil
	})
	if len(tail) != 7 || tail[0] != "line 33" || tail[6] != "line 39" {
		t.Errorf("tail 7 = %v", tail)
	}
}

func TestLogFollowAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c-json.log")
	w, err := OpenWriter(path, Rotation{MaxSize: 200, MaxFiles: 20})
	if err != nil {
		t.Fatal(err)
	}
	out := w.Stream("stdout")
	fmt.Fprintf(out, "first\n")
	done := make(chan struct{})
	var got []string
	errc := make(chan error, 1)
	go func() {
		errc <- Read(context.Background(), path, ReadOptions{Tail: -1, Follow: true, Done: done}, func(e Entry) error {
			got = append(got, strings.TrimSpace(string(e.Line)))
			return nil
		})
	}()
	for i := 0; i < 12; i++ {
		fmt.Fprintf(out, "l%02d\n", i)
		time.Sleep(20 * time.Millisecond)
	}
	out.Close()
	w.Close()
	time.Sleep(300 * time.Millisecond)
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got) != 13 || got[0] != "first" || got[12] != "l11" {
		t.Errorf("follow across rotation got %v", got)
	}
}
