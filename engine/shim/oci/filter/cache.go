package filter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Cache keeps compiled programs by profile: in memory for the runtime
// server's life, and in a directory for the runtimes of one step and the
// next server. Profiles differ by capabilities and by --security-opt, so a
// few programs serve every container.
type Cache struct {
	dir string // "" keeps none on disk
	mu  sync.Mutex
	mem map[string][]byte // encoded programs by profile hash
}

// NewCache returns a cache keeping its files in dir.
func NewCache(dir string) *Cache {
	return &Cache{dir: dir, mem: map[string][]byte{}}
}

// Get returns the encoded program of the profile whose JSON is profile
// (nil for none), compiling it only if neither memory nor the directory
// has it: a start that finds it decodes no profile. A file that does not
// decode is compiled again and replaced.
func (c *Cache) Get(profile []byte) ([]byte, error) {
	if len(profile) == 0 {
		return nil, nil
	}
	sum := sha256.Sum256(profile)
	key := hex.EncodeToString(sum[:])
	c.mu.Lock()
	b, ok := c.mem[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	path := ""
	if c.dir != "" {
		path = filepath.Join(c.dir, key+".bpf")
		if b, err := os.ReadFile(path); err == nil {
			if _, err := Decode(b); err == nil {
				c.put(key, b)
				return b, nil
			}
		}
	}
	var s specs.LinuxSeccomp
	if err := json.Unmarshal(profile, &s); err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	p, err := Compile(&s)
	if err != nil || p == nil {
		return nil, err
	}
	b = p.Encode()
	if path != "" {
		// Another runtime may write the same file: each writes its own
		// and renames it over, the content being the same.
		if err := os.MkdirAll(c.dir, 0o700); err == nil {
			if f, err := os.CreateTemp(c.dir, ".bpf-*"); err == nil {
				_, werr := f.Write(b)
				if cerr := f.Close(); werr == nil && cerr == nil {
					_ = os.Rename(f.Name(), path)
				}
				_ = os.Remove(f.Name())
			}
		}
	}
	c.put(key, b)
	return b, nil
}

func (c *Cache) put(key string, b []byte) {
	c.mu.Lock()
	c.mem[key] = b
	c.mu.Unlock()
}
