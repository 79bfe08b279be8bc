package buildctx

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// keptFiles are never removed by .dockerignore, at the context's root.
var keptFiles = map[string]bool{".dockerignore": true, "Dockerfile": true, "dockerfile": true}

// applyIgnore moves the paths the context's .dockerignore excludes out of
// the tree, into the hidden directory (see the package comment).
func (c *Context) applyIgnore() error {
	data, err := readIn(c.dir, ".dockerignore", c.priv)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, errOutside):
		return userErrorf("forbidden path outside the build context: .dockerignore ()")
	case err != nil:
		return userErrorf("reading .dockerignore: %v", err)
	}
	patterns, err := ignorefile.ReadAll(bytes.NewReader(data))
	if err != nil {
		return userErrorf("reading .dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return userErrorf("parsing .dockerignore: %v", err)
	}
	_, err = c.prune("", patternmatcher.MatchInfo{}, pm)
	return err
}

// prune excludes what pm matches in rel, a directory of the tree, and
// reports whether anything in it stays. A directory that matches is
// moved away whole, unless the patterns have exceptions ("!"): then what
// they keep in it stays, and the directory with it.
func (c *Context) prune(rel string, info patternmatcher.MatchInfo, pm *patternmatcher.PatternMatcher) (bool, error) {
	ents, err := os.ReadDir(filepath.Join(c.dir, rel))
	if err != nil {
		return false, fmt.Errorf("applying .dockerignore: %w", err)
	}
	kept := false
	for _, e := range ents {
		if rel == "" && (e.Name() == c.priv || keptFiles[e.Name()]) {
			kept = true
			continue
		}
		child := path.Join(rel, e.Name())
		excluded, childInfo, err := pm.MatchesUsingParentResults(child, info)
		if err != nil {
			return false, userErrorf("applying .dockerignore to %s: %v", child, err)
		}
		if e.IsDir() && (!excluded || pm.Exclusions()) {
			childKept, err := c.prune(child, childInfo, pm)
			if err != nil {
				return false, err
			}
			if !excluded || childKept {
				kept = true
			} else if err := os.Remove(filepath.Join(c.dir, child)); err != nil {
				return false, fmt.Errorf("applying .dockerignore: %w", err) // emptied by prune
			}
			continue
		}
		if !excluded {
			kept = true
			continue
		}
		if err := c.exclude(child); err != nil {
			return false, err
		}
	}
	return kept, nil
}

// exclude moves rel out of the tree.
func (c *Context) exclude(rel string) error {
	dst := filepath.Join(c.excludedDir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("applying .dockerignore: %w", err)
	}
	if err := os.Rename(filepath.Join(c.dir, filepath.FromSlash(rel)), dst); err != nil {
		return fmt.Errorf("applying .dockerignore: %w", err)
	}
	return nil
}
