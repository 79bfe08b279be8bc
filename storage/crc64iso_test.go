package storage

import (
	"bytes"
	"hash/crc64"
	"math/rand/v2"
	"testing"

	"github.com/vbatts/tar-split/tar/storage"
)

// TestCRCISOMatchesLibrary: the word-at-a-time CRC equals hash/crc64's
// with tar-split's table for every length up to 300 bytes, fed whole and
// in two pieces split anywhere, from any state.
func TestCRCISOMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		for _, data := range [][]byte{p, bytes.Repeat([]byte{0xff}, n), make([]byte, n)} {
			checkCRCISO(t, data, r.IntN(n+1), r.Uint64())
		}
	}
}

// FuzzCRCISO compares the CRC with hash/crc64's on any input, split and
// started anywhere.
func FuzzCRCISO(f *testing.F) {
	f.Add([]byte("hello, layer"), 5, uint64(0))
	f.Add(bytes.Repeat([]byte{0x80}, 40), 17, uint64(1)<<63)
	f.Fuzz(func(t *testing.T, data []byte, split int, start uint64) {
		if split < 0 || split > len(data) {
			split = len(data) / 2
		}
		checkCRCISO(t, data, split, start)
	})
}

func checkCRCISO(t *testing.T, data []byte, split int, start uint64) {
	t.Helper()
	want := crc64.Update(start, storage.CRCTable, data)
	if got := crcISOUpdate(start, data); got != want {
		t.Fatalf("crc of %d bytes from %#x = %#x, want %#x", len(data), start, got, want)
	}
	if got := crcISOUpdate(crcISOUpdate(start, data[:split]), data[split:]); got != want {
		t.Fatalf("crc of %d bytes split at %d = %#x, want %#x", len(data), split, got, want)
	}
	lib := crc64.New(storage.CRCTable)
	lib.Write(data)
	var c crcISO
	c.Write(data[:split])
	c.Write(data[split:])
	if got, want := c.Sum([]byte("x")), lib.Sum([]byte("x")); !bytes.Equal(got, want) {
		t.Fatalf("Sum = %x, want %x", got, want)
	}
	c.Reset()
	lib.Reset()
	if got, want := c.Sum(nil), lib.Sum(nil); !bytes.Equal(got, want) {
		t.Fatalf("Sum after Reset = %x, want %x", got, want)
	}
}

func BenchmarkCRCISO(b *testing.B) {
	p := make([]byte, 1<<20)
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			crcISOUpdate(0, p)
		}
	})
	b.Run("hash/crc64", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			crc64.Update(0, storage.CRCTable, p)
		}
	})
}
