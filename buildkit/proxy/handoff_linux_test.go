package proxy

import (
	"bufio"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// unixPair returns the two ends of a connected unix stream socket pair,
// made through a listener as the engine's API socket makes them.
func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// A connection handed over reads first the bytes the engine read, then
// what the client sends; what is written to it reaches the client; and
// the engine's copy of it can go without ending it.
func TestHandoff(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "buildkit.sock")
	hl, err := ListenHandoff(HandoffPath(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	client, server := unixPair(t)
	pre := "POST /v1.53/session HTTP/1.1\r\nHost: api\r\nUpgrade: h2c\r\n\r\nearly"
	got := make(chan net.Conn, 1)
	go func() {
		c, err := hl.Accept()
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	if err := sendConn(HandoffPath(sock), server, []byte(pre)); err != nil {
		t.Fatal(err)
	}
	server.Close() // the engine is out of the path
	c := <-got
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	if _, err := client.Write([]byte(" late\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	b := make([]byte, len(pre)+len(" late\n"))
	if _, err := io.ReadFull(r, b); err != nil || string(b) != pre+" late\n" {
		t.Fatalf("read %q, %v; want the request, then the client's bytes", b, err)
	}
	if _, err := c.Write([]byte("HTTP/1.1 101 Switching Protocols\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(client).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 101") {
		t.Fatalf("the client read %q, %v", line, err)
	}
}

// A hand-over nobody takes fails, and the connection stays the caller's.
func TestHandoffRefused(t *testing.T) {
	_, server := unixPair(t)
	if err := sendConn(filepath.Join(t.TempDir(), "none.handoff"), server, []byte("x")); err == nil {
		t.Fatal("a hand-over to no socket succeeded")
	}
	if err := sendConn(filepath.Join(t.TempDir(), "x"), server, make([]byte, maxPreamble+1)); err == nil {
		t.Fatal("an oversized hand-over succeeded")
	}
	if _, err := server.Write([]byte("still mine")); err != nil {
		t.Fatalf("the connection after failed hand-overs: %v", err)
	}
}
