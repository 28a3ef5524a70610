package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is every time in the images: the config's created time, each
// history entry's and every file's mtime. With it, the same inputs give
// the same digests on any machine, at any time.
var epoch = time.Unix(0, 0).UTC()

// layerTar is the uncompressed tar of a layer's entries, in the order
// given (sorted, parents first), owned as the entries say, mtime epoch.
func layerTar(entries []fileEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: epoch,
		}
		var data []byte
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		default:
			h.Typeflag = tar.TypeReg
			data = e.data
			if e.source != "" {
				b, err := os.ReadFile(e.source)
				if err != nil {
					return nil, err
				}
				data = b
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
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

// image assembles the stage as an OCI image for linux/arch: one layer per
// COPY, gzip-compressed (deterministic for the same bytes and Go), the
// config's fields from the instructions, and every time set to epoch.
func (st *stage) image(arch string) (v1.Image, error) {
	if arch == "" {
		arch = runtime.GOARCH
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i, entries := range st.layers {
		data, err := layerTar(entries)
		if err != nil {
			return nil, fmt.Errorf("layer %d (%s): %w", i, st.createdBy[i], err)
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.History = nil
	for _, h := range st.history {
		cf.History = append(cf.History, v1.History{Created: v1.Time{Time: epoch}, CreatedBy: h.createdBy, EmptyLayer: h.emptyLayer})
	}
	cf.Config = v1.Config{
		User:         st.user,
		Env:          st.env,
		Entrypoint:   st.entry,
		Cmd:          st.cmd,
		WorkingDir:   st.workdir,
		ExposedPorts: st.ports,
	}
	if len(st.labels) > 0 {
		cf.Config.Labels = st.labels
	}
	return mutate.ConfigFile(img, cf)
}
