package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tarMain is this binary run as tar (its name, argv[0], is tar: the image
// has it as /bin/tar too), for the init container of the test pods
// `operator-sdk scorecard` starts (internal/scorecard/testpod.go in
// operator-sdk v1.42.3): `tar xvzf /scorecard/bundle.tar.gz -C
// /scorecard-bundle`, in --untar-image (upstream's scorecard-untar image is
// ubi9, whose tar it runs). It extracts (x) or lists (t) one archive (f
// FILE, "-" for stdin), gzip-compressed with z, verbose with v, into -C DIR
// (or the working directory). The letters come bundled as tar's first word,
// with or without a dash, or as separate options. Regular files,
// directories and symbolic links; an entry whose path or link leaves DIR is
// refused. Returns the exit status: 0, or 2 with a message on stderr.
func tarMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := runTar(args, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "tar: %v\n", err)
		return 2
	}
	return 0
}

func runTar(args []string, stdin io.Reader, stdout io.Writer) error {
	var extract, list, gz, verbose bool
	file, dir := "", "."
	var rest []string
	letters := func(word string) ([]string, error) {
		var want []string // f and C take the words after, in order
		for _, c := range word {
			switch c {
			case 'x':
				extract = true
			case 't':
				list = true
			case 'z':
				gz = true
			case 'v':
				verbose = true
			case 'f', 'C':
				want = append(want, string(c))
			default:
				return nil, fmt.Errorf("unsupported option %q (x, t, z, v, f FILE, C DIR)", c)
			}
		}
		return want, nil
	}
	var pending []string
	for i, a := range args {
		switch {
		case len(pending) > 0:
			if pending[0] == "f" {
				file = a
			} else {
				dir = a
			}
			pending = pending[1:]
		case i == 0 && !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "-") && len(a) > 1 && !strings.HasPrefix(a, "--"):
			w, err := letters(strings.TrimPrefix(a, "-"))
			if err != nil {
				return err
			}
			pending = append(pending, w...)
		default:
			rest = append(rest, a)
		}
	}
	switch {
	case len(pending) > 0:
		return fmt.Errorf("option %s needs an argument", pending[0])
	case extract == list:
		return errors.New("give one of x (extract) and t (list)")
	case file == "":
		return errors.New("give the archive: f FILE")
	case len(rest) > 0:
		return fmt.Errorf("naming members (%s) is not supported: the whole archive is read", strings.Join(rest, " "))
	}
	var in io.Reader = stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	if gz {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		defer func() { _ = zr.Close() }()
		in = zr
	}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if verbose || list {
			fmt.Fprintln(stdout, h.Name)
		}
		if extract {
			if err := extractEntry(dir, h, tr); err != nil {
				return err
			}
		}
	}
}

// extractEntry writes one entry under dir.
func extractEntry(dir string, h *tar.Header, r io.Reader) error {
	name := filepath.Clean(h.Name)
	if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s: leaves the directory it is extracted to", h.Name)
	}
	path := filepath.Join(dir, name)
	mode := os.FileMode(h.Mode).Perm()
	switch h.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(path, mode|0o700)
	case tar.TypeReg:
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	case tar.TypeSymlink:
		target := filepath.Join(filepath.Dir(name), h.Linkname)
		if filepath.IsAbs(h.Linkname) || target == ".." || strings.HasPrefix(target, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: its link %s leaves the directory it is extracted to", h.Name, h.Linkname)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.Symlink(h.Linkname, path)
	}
	return fmt.Errorf("%s: entry type %q is not supported (files, directories, symbolic links)", h.Name, h.Typeflag)
}
