// Command dnsd is the DNS server of hutch's integration tests, built by
// them (integration/dnsd_test.go) with the standard library alone, so
// that it builds offline. It listens on port 53 (UDP and TCP) of every
// address of its network namespace, answers the A queries of the names
// given as name=address arguments, NOERROR without records the other
// types of those names, and everything else with rcode (-rcode,
// NXDOMAIN by default). It logs each query with its source address, and
// "ready" once it listens.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"strings"
)

const (
	typeA      = 1
	classIN    = 1
	rcodeNX    = 3
	headerSize = 12
)

func main() {
	rcode := flag.Int("rcode", rcodeNX, "rcode of the names not given")
	flag.Parse()
	names := map[string]netip.Addr{}
	for _, arg := range flag.Args() {
		name, addr, ok := strings.Cut(arg, "=")
		a, err := netip.ParseAddr(addr)
		if !ok || err != nil || !a.Is4() {
			log.Fatalf("dnsd: %q is not name=IPv4", arg)
		}
		names[strings.ToLower(strings.TrimSuffix(name, "."))] = a
	}
	log.SetFlags(0)
	log.SetOutput(os.Stdout)
	pc, err := net.ListenPacket("udp", ":53")
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", ":53")
	if err != nil {
		log.Fatal(err)
	}
	s := &server{names: names, rcode: *rcode}
	go s.serveTCP(l)
	log.Println("ready")
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			log.Fatal(err)
		}
		if resp, err := s.answer(buf[:n], "udp", from); err == nil {
			pc.WriteTo(resp, from)
		}
	}
}

type server struct {
	names map[string]netip.Addr
	rcode int
}

func (s *server) serveTCP(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer c.Close()
			var size uint16
			if binary.Read(c, binary.BigEndian, &size) != nil {
				return
			}
			q := make([]byte, size)
			if _, err := io.ReadFull(c, q); err != nil {
				return
			}
			if resp, err := s.answer(q, "tcp", c.RemoteAddr()); err == nil {
				c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(resp))))
				c.Write(resp)
			}
		}()
	}
}

// answer builds the response to the query q: its header and question,
// and the A record of a known name.
func (s *server) answer(q []byte, proto string, from net.Addr) ([]byte, error) {
	if len(q) < headerSize || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, errors.New("not a query with one question")
	}
	name, end, err := readName(q, headerSize)
	if err != nil || end+4 > len(q) {
		return nil, errors.New("bad question")
	}
	qtype, qclass := binary.BigEndian.Uint16(q[end:]), binary.BigEndian.Uint16(q[end+2:])
	log.Printf("query %s type %d %s from %s", name, qtype, proto, from)
	resp := append([]byte(nil), q[:end+4]...)
	flags := uint16(1<<15 | 1<<10)                   // a response, authoritative
	flags |= binary.BigEndian.Uint16(q[2:]) & 0x7900 // opcode and RD as asked
	addr, known := s.names[name]
	if !known || qclass != classIN {
		flags |= uint16(s.rcode)
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint32(resp[6:], 0) // no answer, authority or additional records yet
	binary.BigEndian.PutUint16(resp[10:], 0)
	if known && qclass == classIN && qtype == typeA {
		binary.BigEndian.PutUint16(resp[6:], 1)
		resp = binary.BigEndian.AppendUint16(resp, 0xc000|headerSize) // the question's name
		resp = binary.BigEndian.AppendUint16(resp, typeA)
		resp = binary.BigEndian.AppendUint16(resp, classIN)
		resp = binary.BigEndian.AppendUint32(resp, 60)
		resp = binary.BigEndian.AppendUint16(resp, 4)
		a := addr.As4()
		resp = append(resp, a[:]...)
	}
	return resp, nil
}

// readName reads the uncompressed name at off in msg, lowercased and
// without the final dot, and returns the offset after it.
func readName(msg []byte, off int) (string, int, error) {
	var labels []string
	for {
		if off >= len(msg) {
			return "", 0, errors.New("name beyond the message")
		}
		n := int(msg[off])
		off++
		if n == 0 {
			return strings.ToLower(strings.Join(labels, ".")), off, nil
		}
		if n > 63 || off+n > len(msg) {
			return "", 0, fmt.Errorf("bad label length %d", n)
		}
		labels = append(labels, string(msg[off:off+n]))
		off += n
	}
}
