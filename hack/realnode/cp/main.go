// Command cp is the /bin/cp of the OLM image make olm-local builds
// (hack/olm-image.sh): a static Go cp that does what OLM needs of one.
//
// Why it exists: OLM v0's catalog-operator unpacks a bundle with a Job
// whose init container runs, in OLM's own image (the -util-image),
//
//	/bin/cp -Rv /bin/cpb /util/cpb
//
// (pkg/controller/bundle/bundle_unpacker.go in operator-lifecycle-manager
// v0.46.0), to put OLM's cpb where the bundle container can run it. OLM's
// image is built FROM gcr.io/distroless/static:debug, whose busybox
// supplies that cp (the Dockerfile links /bin/cp to /busybox/cp). Here the
// image is built FROM scratch, with no base image and no shell, so this
// binary takes busybox's place.
//
// It copies as `cp [-R|-r] [-v] [-p] SOURCE... DEST` does: SOURCE (a file,
// or with -R a directory and all it holds, symbolic links copied as links)
// to DEST, or into DEST if DEST is a directory (which it must be for more
// than one SOURCE). A file keeps its permission bits (so cpb stays
// executable), less the umask unless -p; a directory made keeps its
// source's bits. -v prints "'SRC' -> 'DST'" for each
// file, directory and link made. Other flags are refused.
package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

type options struct {
	recursive, verbose, preserve bool
	out                          io.Writer
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "cp:", err)
		os.Exit(1)
	}
}

// run parses the arguments (flags first, possibly combined, "--" ends them)
// and copies.
func run(args []string, out io.Writer) error {
	o := options{out: out}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'R', 'r':
				o.recursive = true
			case 'v':
				o.verbose = true
			case 'p':
				o.preserve = true
			default:
				return fmt.Errorf("unsupported option -%c (usage: cp [-R] [-v] [-p] SOURCE... DEST)", c)
			}
		}
	}
	if len(args) < 2 {
		return errors.New("usage: cp [-R] [-v] [-p] SOURCE... DEST")
	}
	srcs, dst := args[:len(args)-1], args[len(args)-1]
	dstIsDir := false
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dstIsDir = true
	}
	if len(srcs) > 1 && !dstIsDir {
		return fmt.Errorf("target %q is not a directory", dst)
	}
	var failed error
	for _, src := range srcs {
		to := dst
		if dstIsDir {
			to = filepath.Join(dst, filepath.Base(filepath.Clean(src)))
		}
		if err := o.copy(src, to, true); err != nil {
			fmt.Fprintln(os.Stderr, "cp:", err)
			failed = errors.New("not every source was copied")
		}
	}
	return failed
}

// copy copies src to dst. top says src was named on the command line: there
// a symbolic link is followed unless -R (as cp -R without -L or -H would
// copy it as a link, so does this below the top and at it).
func (o options) copy(src, dst string, top bool) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 && (!o.recursive) && top {
		if fi, err = os.Stat(src); err != nil {
			return err
		}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
		o.say(src, dst)
		return nil
	case fi.IsDir():
		if !o.recursive {
			return fmt.Errorf("omitting directory %q (no -R)", src)
		}
		if inside(src, dst) {
			return fmt.Errorf("cannot copy directory %q into itself (%q)", src, dst)
		}
		made := false
		if err := os.Mkdir(dst, o.perm(fi.Mode()|0o700)); err != nil {
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			if d, err := os.Stat(dst); err != nil || !d.IsDir() {
				return fmt.Errorf("cannot overwrite non-directory %q with directory %q", dst, src)
			}
		} else {
			made = true
			o.say(src, dst)
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := o.copy(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), false); err != nil {
				return err
			}
		}
		if made {
			// Made writable to fill it; now the source's bits.
			return os.Chmod(dst, o.perm(fi.Mode()))
		}
		return nil
	case fi.Mode().IsRegular():
		return o.copyFile(src, dst, fi)
	default:
		return fmt.Errorf("%q: not a file, directory or symbolic link", src)
	}
}

func (o options) copyFile(src, dst string, fi fs.FileInfo) error {
	if same(src, dst) {
		return fmt.Errorf("%q and %q are the same file", src, dst)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, o.perm(fi.Mode()))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if o.preserve {
		// The umask applied at create; -p asks for the source's bits.
		if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	o.say(src, dst)
	return nil
}

// perm is the mode a new file or directory is created with: the source's
// permission bits (the kernel applies the umask unless -p chmods after).
func (o options) perm(m fs.FileMode) fs.FileMode { return m.Perm() }

func (o options) say(src, dst string) {
	if o.verbose {
		fmt.Fprintf(o.out, "'%s' -> '%s'\n", src, dst)
	}
}

// inside says whether path dst is dir or below it.
func inside(dir, dst string) bool {
	d, err1 := filepath.Abs(dir)
	t, err2 := filepath.Abs(dst)
	if err1 != nil || err2 != nil {
		return false
	}
	return t == d || strings.HasPrefix(t, d+string(filepath.Separator))
}

// same says whether a and b are one file (both exist, same device and inode).
func same(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	sa, ok1 := fa.Sys().(*syscall.Stat_t)
	sb, ok2 := fb.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
