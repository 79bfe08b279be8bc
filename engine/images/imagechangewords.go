package images

import (
	"fmt"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// The words of a change are split as Docker's Dockerfile parser splits
// them, quotes and escapes kept, and then each is expanded by the
// builder's shell lexer, which removes them: `ENV A="$B c"` is one word
// whose value is B's value and " c".

// envGetter is the config's environment as the lexer reads it.
func (st *changeState) envGetter() shell.EnvGetter {
	return shell.EnvsFromSlice(st.cfg.Env)
}

// expand substitutes the config's variables in word and removes its
// quotes and escapes.
func (st *changeState) expand(word string) (string, error) {
	s, _, err := st.lex.ProcessWord(word, st.envGetter())
	return s, err
}

// keyValues parses and expands "k=v k2=\"v 2\"" or the legacy "k value
// with spaces" (ENV and LABEL).
func (st *changeState) keyValues(rest string) ([][2]string, error) {
	words, err := rawWords(rest)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("requires at least one argument")
	}
	var raw [][2]string
	if !strings.Contains(words[0], "=") {
		// Legacy form: the value is the rest of the line.
		i := strings.IndexAny(rest, " \t")
		if len(words) < 2 || i < 0 {
			return nil, fmt.Errorf("must have two arguments")
		}
		raw = [][2]string{{words[0], strings.TrimSpace(rest[i:])}}
	} else {
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				return nil, fmt.Errorf("syntax error - can't find = in %q. Must be of the form: name=value", w)
			}
			raw = append(raw, [2]string{k, v})
		}
	}
	out := make([][2]string, 0, len(raw))
	for _, kv := range raw {
		k, err := st.expand(kv[0])
		if err != nil {
			return nil, err
		}
		if err := checkKey(k); err != nil {
			return nil, err
		}
		v, err := st.expand(kv[1])
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("names can not be blank")
	}
	return nil
}

// rawWords splits s on white space outside quotes and not escaped,
// keeping every character of each word, quotes and backslashes included.
func rawWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	quote := byte(0)
	escaped := false
	// Byte by byte: every special character is ASCII, and bytes that are
	// not UTF-8 are kept as they are.
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == ' ' || c == '\t':
			if cur.Len() > 0 {
				words = append(words, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteByte(c)
	}
	if quote != 0 {
		return nil, fmt.Errorf("unmatched quote in %q", s)
	}
	if cur.Len() > 0 {
		words = append(words, cur.String())
	}
	return words, nil
}
