// Command mkimage packs static binaries into a container image of one layer,
// FROM scratch, and writes it as a docker-archive tarball that `ctr image
// import` (and `docker load`) read: no Docker daemon, no registry. The local
// cluster's real node (hack/real-node.sh) imports its sandbox (pause) image
// and test images this way.
//
//	mkimage -tag mydeployment.io/realnode/pause:v1 -out pause.tar \
//	  -file bin/pause=/pause -entrypoint /pause
//
// The output is reproducible: the same files give the same bytes, so the same
// image ID and digest (every mtime is the epoch, owners are root, entries are
// sorted, the config has no creation time and the layer's gzip no header
// timestamp).
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// files is the repeatable -file SRC=DEST flag.
type files map[string]string

func (f files) String() string { return fmt.Sprint(map[string]string(f)) }

func (f files) Set(v string) error {
	src, dest, ok := strings.Cut(v, "=")
	if !ok || src == "" || !strings.HasPrefix(dest, "/") {
		return fmt.Errorf("want SRC=/DEST, got %q", v)
	}
	f[path.Clean(dest)] = src
	return nil
}

func main() {
	fs := files{}
	tag := flag.String("tag", "", "image reference to name the image, e.g. mydeployment.io/realnode/pause:v1")
	out := flag.String("out", "", "docker-archive tarball to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint, words separated by spaces")
	arch := flag.String("arch", runtime.GOARCH, "image architecture")
	flag.Var(fs, "file", "SRC=/DEST: a file of this machine and its path in the image, executable (repeatable)")
	flag.Parse()
	if *tag == "" || *out == "" || len(fs) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	digest, err := write(*tag, *out, fs, strings.Fields(*entrypoint), *arch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

// write packs fs into one layer, makes the image and writes it to out; it
// returns the image ID (the config's digest).
func write(tag, out string, fs files, entrypoint []string, arch string) (string, error) {
	ref, err := name.NewTag(tag)
	if err != nil {
		return "", err
	}
	layerTar, err := tarOf(fs)
	if err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{}
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = []string{"PATH=/"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return "", err
	}
	id, err := img.ConfigName()
	if err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return "", err
	}
	return id.String(), os.Rename(tmp, out)
}

// tarOf is the layer: each file at its path, mode 0755, with its parent
// directories, sorted, every time the epoch and every owner root.
func tarOf(fs files) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dests := make([]string, 0, len(fs))
	for d := range fs {
		dests = append(dests, d)
	}
	sort.Strings(dests)
	dirs := map[string]bool{}
	for _, dest := range dests {
		var parents []string
		for d := path.Dir(dest); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/",
				Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
		}
		data, err := os.ReadFile(fs[dest])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dest, "/"),
			Mode: 0o755, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
