package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// srcDir is where the suite's source lives in the work directory: a writable
// copy of the module (the module cache is read-only, and the tests read
// their testdata relative to their package).
func srcDir(dir string) string { return filepath.Join(dir, "moby-"+MobyVersion) }

// testBinary is the compiled test of package pkg ("network/bridge").
func testBinary(dir, pkg string) string {
	return filepath.Join(dir, "bin", strings.ReplaceAll(pkg, "/", "-")+".test")
}

// buildSuite fetches the module through the Go module proxy and compiles
// each package's tests, once per version: what is already there is kept.
func buildSuite(ctx context.Context, dir string, pkgs []string) error {
	src := srcDir(dir)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		mod, err := download(ctx)
		if err != nil {
			return err
		}
		if err := copyTree(mod, src+".tmp"); err != nil {
			return err
		}
		if err := os.Rename(src+".tmp", src); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	for _, pkg := range pkgs {
		out := testBinary(dir, pkg)
		if _, err := os.Stat(out); err == nil {
			continue
		}
		fmt.Printf("compat: compiling integration/%s\n", pkg)
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out+".tmp", "./integration/"+pkg)
		cmd.Dir = src
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("compiling integration/%s: %w", pkg, err)
		}
		if err := os.Rename(out+".tmp", out); err != nil {
			return err
		}
	}
	return nil
}

// download fetches the pinned module into the module cache and returns its
// directory there.
func download(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", MobyModule+"@"+MobyVersion).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", MobyModule, MobyVersion, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", MobyModule, MobyVersion, info.Error)
	}
	return info.Dir, nil
}

// copyTree copies the regular files and directories of src to dst, writable
// by the owner and readable by all (the tests run as another user).
func copyTree(src, dst string) error {
	os.RemoveAll(dst)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, 0o644|info.Mode().Perm()&0o111)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		return nil
	})
}
