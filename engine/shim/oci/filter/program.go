package filter

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Program is a compiled filter: classic BPF for seccomp(2) and the
// SECCOMP_FILTER_FLAG_* to load it with.
type Program struct {
	Flags uint32
	Insns []unix.SockFilter
}

// magic starts an encoded Program.
const magic = "HUTCHBPF"

// maxInsns is the kernel's BPF_MAXINSNS.
const maxInsns = 4096

// Encode returns p in the form Decode reads: magic, flags, the count of
// instructions, then the instructions (little-endian).
func (p *Program) Encode() []byte {
	b := make([]byte, 0, len(magic)+8+8*len(p.Insns))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, p.Flags)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.Insns)))
	for _, in := range p.Insns {
		b = binary.LittleEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.LittleEndian.AppendUint32(b, in.K)
	}
	return b
}

var errFormat = errors.New("not a seccomp program")

// Decode reads what Encode wrote.
func Decode(b []byte) (*Program, error) {
	if len(b) < len(magic)+8 || string(b[:len(magic)]) != magic {
		return nil, errFormat
	}
	b = b[len(magic):]
	p := &Program{Flags: binary.LittleEndian.Uint32(b)}
	n := binary.LittleEndian.Uint32(b[4:])
	b = b[8:]
	if n == 0 || n > maxInsns || uint64(len(b)) != 8*uint64(n) {
		return nil, fmt.Errorf("%w: %d instructions in %d bytes", errFormat, n, len(b))
	}
	p.Insns = make([]unix.SockFilter, n)
	for i := range p.Insns {
		p.Insns[i] = unix.SockFilter{
			Code: binary.LittleEndian.Uint16(b),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.LittleEndian.Uint32(b[4:]),
		}
		b = b[8:]
	}
	return p, nil
}
