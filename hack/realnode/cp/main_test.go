package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != data {
		t.Errorf("%s holds %q, want %q", path, b, data)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("%s has mode %v, want %v", path, fi.Mode().Perm(), mode)
	}
}

// OLM's bundle-unpack init container: /bin/cp -Rv /bin/cpb /util/cpb, /util
// an empty directory (an emptyDir volume), cpb an executable.
func TestOLMUnpackCommand(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	d := t.TempDir()
	write(t, filepath.Join(d, "bin/cpb"), "\x7fELF cpb", 0o755)
	if err := os.Mkdir(filepath.Join(d, "util"), 0o777); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	src, dst := filepath.Join(d, "bin/cpb"), filepath.Join(d, "util/cpb")
	if err := run([]string{"-Rv", src, dst}, &out); err != nil {
		t.Fatal(err)
	}
	check(t, dst, "\x7fELF cpb", 0o755)
	if want := "'" + src + "' -> '" + dst + "'\n"; out.String() != want {
		t.Errorf("-v printed %q, want %q", out.String(), want)
	}
	// Again: the file is overwritten, not copied into itself.
	write(t, src, "cpb v2", 0o755)
	if err := run([]string{"-Rv", src, dst}, &out); err != nil {
		t.Fatal(err)
	}
	check(t, dst, "cpb v2", 0o755)
}

func TestDirectoryRecursive(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	d := t.TempDir()
	src := filepath.Join(d, "src")
	write(t, filepath.Join(src, "a"), "a", 0o644)
	write(t, filepath.Join(src, "sub/b"), "b", 0o755)
	write(t, filepath.Join(src, "sub/deep/c"), "c", 0o600)
	if err := os.Symlink("sub/b", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}

	// To a new name: the directory itself becomes dst.
	var out bytes.Buffer
	if err := run([]string{"-R", "-v", src, filepath.Join(d, "new")}, &out); err != nil {
		t.Fatal(err)
	}
	check(t, filepath.Join(d, "new/a"), "a", 0o644)
	check(t, filepath.Join(d, "new/sub/b"), "b", 0o755)
	check(t, filepath.Join(d, "new/sub/deep/c"), "c", 0o600)
	if target, err := os.Readlink(filepath.Join(d, "new/link")); err != nil || target != "sub/b" {
		t.Errorf("link copied as %q, %v; want a link to sub/b", target, err)
	}
	// new, a, sub, sub/b, sub/deep, sub/deep/c, link
	if n := strings.Count(out.String(), " -> "); n != 7 {
		t.Errorf("-v printed %d lines, want 7:\n%s", n, out.String())
	}

	// Into an existing directory: dst/src.
	if err := os.Mkdir(filepath.Join(d, "into"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-r", src, filepath.Join(d, "into")}, &out); err != nil {
		t.Fatal(err)
	}
	check(t, filepath.Join(d, "into/src/sub/deep/c"), "c", 0o600)

	// Into itself: refused.
	if err := run([]string{"-R", src, filepath.Join(src, "sub")}, &out); err == nil {
		t.Error("copying a directory into itself succeeded")
	}
}

func TestRefusals(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "f"), "f", 0o644)
	write(t, filepath.Join(d, "g"), "g", 0o644)
	if err := os.Mkdir(filepath.Join(d, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"directory without -R":               {filepath.Join(d, "dir"), filepath.Join(d, "dir2")},
		"two sources, destination not a dir": {filepath.Join(d, "f"), filepath.Join(d, "g"), filepath.Join(d, "h")},
		"unknown flag":                       {"-a", filepath.Join(d, "f"), filepath.Join(d, "h")},
		"one argument":                       {filepath.Join(d, "f")},
		"missing source":                     {filepath.Join(d, "nope"), filepath.Join(d, "h")},
		"a file onto itself":                 {filepath.Join(d, "f"), filepath.Join(d, "f")},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: cp %v succeeded", name, args)
		}
	}
	if _, err := os.Stat(filepath.Join(d, "dir2")); err == nil {
		t.Error("cp without -R made the directory")
	}
}

func TestPreserveAndUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	d := t.TempDir()
	write(t, filepath.Join(d, "x"), "x", 0o755)
	if err := run([]string{filepath.Join(d, "x"), filepath.Join(d, "y")}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	check(t, filepath.Join(d, "y"), "x", 0o700)
	if err := run([]string{"-p", filepath.Join(d, "x"), filepath.Join(d, "z")}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	check(t, filepath.Join(d, "z"), "x", 0o755)
}
