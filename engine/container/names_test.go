package container

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"web", true},
		{"/web", true},
		{"Web-1.2_x", true},
		{"0a", true},
		{"a", false}, // Docker's pattern wants two characters
		{"/a", false},
		{"", false},
		{"/", false},
		{"//web", false},
		{"_web", false},
		{".web", false},
		{"-web", false},
		{"../../etc", false},
		{"a/b", false},
		{"web/", false},
		{"we b", false},
		{"wéb", false},
		{"web\n", false},
		{"web\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.name)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("err = %v, want invalid argument", err)
			}
			want := "Invalid container name (" + tt.name + "), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"
			if err.Error() != want {
				t.Fatalf("message %q, want %q", err, want)
			}
		})
	}
}

// dockerName is Docker's own definition, the oracle for the fuzz test.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"web", "/web", "a", "../x", "//x", "x\n", "a-b_c.d", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateName(name)
		want := dockerName.MatchString(strings.TrimPrefix(name, "/"))
		if (err == nil) != want {
			t.Fatalf("ValidateName(%q) = %v, Docker's pattern says %v", name, err, want)
		}
		if err == nil && strings.ContainsAny(strings.TrimPrefix(name, "/"), "/\x00") {
			t.Fatalf("accepted %q, which could name a path", name)
		}
	})
}

func TestGeneratedNames(t *testing.T) {
	for _, words := range [][]string{adjectives[:], nouns[:]} {
		if len(words) < 50 {
			t.Fatalf("only %d words", len(words))
		}
		seen := map[string]bool{}
		for _, w := range words {
			if seen[w] || !dockerName.MatchString(w) || strings.Contains(w, "_") {
				t.Fatalf("bad or repeated word %q", w)
			}
			seen[w] = true
		}
	}
	for attempt := range 3 {
		t.Run("attempt", func(t *testing.T) {
			for range 200 {
				n := randomName(attempt)
				if err := ValidateName(n); err != nil || !strings.HasPrefix(n, "/") {
					t.Fatalf("generated %q: %v", n, err)
				}
				adj, noun, ok := strings.Cut(n[1:], "_")
				if !ok || adj == "" || noun == "" {
					t.Fatalf("generated %q, want adjective_noun", n)
				}
				if digit := noun[len(noun)-1]; (attempt > 0) != (digit >= '0' && digit <= '9') {
					t.Fatalf("attempt %d generated %q", attempt, n)
				}
			}
		})
	}
}
