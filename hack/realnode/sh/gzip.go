package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

// gzipHandler runs gzip, gunzip, gzcat and zcat in process, in place of
// mvdan.cc/sh/x/coreutils' (u-root's pkg/core/gzip at
// v0.15.1-0.20251208185023-2f8c7e763cf8), which cannot run the init
// container's `cat ${f} | gzip -d -c > "${file}"`: with no file operand it
// refuses without -f ("ignoring stdout, use -f to compression"), with -f it
// reads the process's os.Stdin instead of the pipe, and it exits 0 when
// decompressing fails. TestCoreutilsGzipCannotDecompressAPipe shows it.
//
// Like GNU gzip, for the options it takes (-c -d -f -k -q -1..-9, and
// gunzip = gzip -d, zcat = gzcat = gzip -dc): no FILE, or "-", is stdin to
// stdout; FILE with -c is FILE to stdout; FILE alone becomes FILE.gz (or,
// decompressing, FILE without .gz) and is removed unless -k. The status is
// 1 if any file failed.
func gzipHandler(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		var decompress, toStdout bool
		switch args[0] {
		case "gzip":
		case "gunzip":
			decompress = true
		case "gzcat", "zcat":
			decompress, toStdout = true, true
		default:
			return next(ctx, args)
		}
		hc := interp.HandlerCtx(ctx)
		fail := func(format string, a ...any) error {
			fmt.Fprintf(hc.Stderr, "%s: "+format+"\n", append([]any{args[0]}, a...)...)
			return interp.ExitStatus(1)
		}
		force, keep, quiet, level := false, false, false, gzip.DefaultCompression
		files := args[1:]
		for len(files) > 0 && len(files[0]) > 1 && files[0][0] == '-' {
			a := files[0]
			files = files[1:]
			if a == "--" {
				break
			}
			for _, c := range a[1:] {
				switch {
				case c == 'c':
					toStdout = true
				case c == 'd':
					decompress = true
				case c == 'f':
					force = true
				case c == 'k':
					keep = true
				case c == 'q':
					quiet = true
				case c >= '1' && c <= '9':
					level = int(c - '0')
				default:
					return fail("unsupported option -%c (this sh's gzip takes -c -d -f -k -q -1..-9)", c)
				}
			}
		}
		if len(files) == 0 {
			files = []string{"-"}
		}
		failed := false
		for _, name := range files {
			if err := gzipFile(hc, name, decompress, toStdout, force, keep, level); err != nil {
				failed = true
				if !quiet {
					fmt.Fprintf(hc.Stderr, "%s: %v\n", args[0], err)
				}
			}
		}
		if failed {
			return interp.ExitStatus(1)
		}
		return nil
	}
}

// gzipFile compresses or decompresses one operand.
func gzipFile(hc interp.HandlerContext, name string, decompress, toStdout, force, keep bool, level int) error {
	var in io.Reader = hc.Stdin
	var out io.Writer = hc.Stdout
	if in == nil {
		in = strings.NewReader("")
	}
	var src, dst string
	if name != "-" {
		src = name
		if !filepath.IsAbs(src) {
			src = filepath.Join(hc.Dir, src)
		}
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
		if !toStdout {
			if decompress {
				if !strings.HasSuffix(src, ".gz") || len(src) == len(".gz") {
					return fmt.Errorf("%s: unknown suffix, ignored", name)
				}
				dst = strings.TrimSuffix(src, ".gz")
			} else {
				dst = src + ".gz"
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			o, err := os.OpenFile(dst, flags, 0o644)
			if err != nil {
				return err
			}
			defer o.Close()
			out = o
		}
	}
	var err error
	if decompress {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(in); err == nil {
			if _, err = io.Copy(out, zr); err == nil {
				err = zr.Close()
			}
		}
	} else {
		var zw *gzip.Writer
		if zw, err = gzip.NewWriterLevel(out, level); err == nil {
			if _, err = io.Copy(zw, in); err == nil {
				err = zw.Close()
			}
		}
	}
	if err != nil {
		if dst != "" {
			_ = os.Remove(dst)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if c, ok := out.(io.Closer); ok && dst != "" {
		if err := c.Close(); err != nil {
			return err
		}
	}
	if dst != "" && !keep {
		return os.Remove(src)
	}
	return nil
}
