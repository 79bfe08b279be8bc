package testimage

import (
	"archive/tar"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The hello program is an x86-64 executable of one loadable segment that
// prints its message (the machines the tests run on are x86-64).
func TestHelloELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(p, helloELF(HelloMessage), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || len(f.Progs) != 1 || f.Progs[0].Type != elf.PT_LOAD {
		t.Fatalf("ELF %v %v, %d program headers", f.Machine, f.Type, len(f.Progs))
	}
	out, err := exec.Command(p).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != HelloMessage {
		t.Fatalf("printed %q", out)
	}
}

func TestDockerBusyboxUsers(t *testing.T) {
	img, err := DockerBusybox()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
	for _, want := range []string{"daemon:x:1:1:", "www-data:x:33:33:", "nobody:x:65534:65534:"} {
		if !strings.Contains(files["etc/passwd"], want) {
			t.Errorf("etc/passwd lacks %q", want)
		}
	}
	if !strings.Contains(files["etc/group"], "wheel:x:10:root") {
		t.Errorf("etc/group: %q", files["etc/group"])
	}
	if _, ok := files["var/www/"]; !ok {
		t.Error("no /var/www")
	}
}
