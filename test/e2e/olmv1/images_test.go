/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package olmv1

import (
	"archive/tar"
	"bufio"
	"bytes"
	"encoding/pem"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/gomega"
)

// ociRegistry is an OCI registry served by this test process on 127.0.0.1
// over HTTPS (go-containerregistry's in-memory registry), as catalogd and
// operator-controller pull catalogs and bundles from a registry. Its
// certificate is written to caDir, which both are told to trust.
type ociRegistry struct {
	srv *httptest.Server
}

func startRegistry(caDir, logPath string) *ociRegistry {
	f, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(f, "", log.LstdFlags))))
	srv.Config.ErrorLog = log.New(f, "", log.LstdFlags)
	srv.StartTLS()
	Expect(os.MkdirAll(caDir, 0o755)).To(Succeed())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	Expect(os.WriteFile(filepath.Join(caDir, "registry.crt"), ca, 0o644)).To(Succeed())
	return &ociRegistry{srv: srv}
}

// host is the registry's host:port, the prefix of its image references.
func (r *ociRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "https://") }

func (r *ociRegistry) stop() {
	if r != nil {
		r.srv.Close()
	}
}

// push builds an image of one layer holding files (path in the image ->
// content; parent directories are added) with the given labels, as a
// Dockerfile FROM scratch with COPY and LABEL lines would, and pushes it as
// ref (host/repository:tag).
func (r *ociRegistry) push(ref string, files map[string][]byte, labels map[string]string) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarOf(files))), nil
	})
	Expect(err).NotTo(HaveOccurred())
	img, err := mutate.AppendLayers(empty.Image, layer)
	Expect(err).NotTo(HaveOccurred())
	cfg, err := img.ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Labels = labels
	img, err = mutate.ConfigFile(img, cfg)
	Expect(err).NotTo(HaveOccurred())
	Expect(crane.Push(img, ref, crane.WithTransport(r.srv.Client().Transport))).To(Succeed())
}

// tarOf is a tar archive of files with their parent directories, in a
// stable order.
func tarOf(files map[string][]byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var parents []string
		for d := path.Dir(name); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755})).To(Succeed())
		}
		Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(files[name]))})).To(Succeed())
		_, err := tw.Write(files[name])
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	return buf.Bytes()
}

// filesUnder reads every file under dir as image paths under prefix.
func filesUnder(dir, prefix string, into map[string][]byte) map[string][]byte {
	if into == nil {
		into = map[string][]byte{}
	}
	Expect(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		into[path.Join(prefix, filepath.ToSlash(rel))] = data
		return err
	})).To(Succeed())
	return into
}

// dockerfileLabels reads the LABEL key=value lines of a Dockerfile, so the
// images built here carry what `make bundle-build` and `make catalog-build`
// give theirs.
func dockerfileLabels(dockerfile string) map[string]string {
	f, err := os.Open(dockerfile)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	labels := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if !strings.HasPrefix(line, "LABEL ") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "LABEL ")), "=")
		Expect(ok).To(BeTrue(), line)
		labels[k] = strings.Trim(v, `"`)
	}
	Expect(s.Err()).NotTo(HaveOccurred())
	Expect(labels).NotTo(BeEmpty(), dockerfile)
	return labels
}
