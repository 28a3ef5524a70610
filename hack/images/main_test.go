package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gcrname "github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const root = "../.."

// copyTree copies the directory src to dst, every file with mode perm.
func copyTree(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, rel), b, perm); err != nil {
			return err
		}
		return os.Chmod(filepath.Join(dst, rel), perm)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// listing is an image's filesystem: path -> "kind mode uid:gid" (mtime too
// if it is not the epoch), every layer applied.
func listing(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	out := map[string]string{}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		kind := map[byte]string{tar.TypeDir: "dir", tar.TypeReg: "file", tar.TypeSymlink: "link"}[h.Typeflag]
		s := fmt.Sprintf("%s %o %d:%d", kind, h.Mode, h.Uid, h.Gid)
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			s += " mtime=" + h.ModTime.String()
		}
		out[strings.TrimSuffix(h.Name, "/")] = s
	}
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSameInputsSameDigest builds the bundle image from bundle.Dockerfile
// twice, the second time from a copy of the bundle with other mtimes and
// another umask's modes: same digest. Then a changed file changes it.
func TestSameInputsSameDigest(t *testing.T) {
	buildFrom := func(perm os.FileMode, mtime time.Time) v1.Image {
		ctx := t.TempDir()
		copyTree(t, filepath.Join(root, "bundle"), filepath.Join(ctx, "bundle"), perm)
		_ = filepath.WalkDir(ctx, func(p string, _ os.DirEntry, _ error) error { return os.Chtimes(p, mtime, mtime) })
		img, err := build(spec{name: "mydeployment.io/mydeployment-operator-bundle:v0.0.1", dockerfile: filepath.Join(root, "bundle.Dockerfile"), context: ctx}, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	a := buildFrom(0o644, time.Now())
	b := buildFrom(0o664, time.Now().Add(-48*time.Hour))
	if da, db := digestOf(t, a), digestOf(t, b); da != db {
		t.Errorf("the same bundle gave two digests: %s and %s", da, db)
	}
	for p, d := range listing(t, a) {
		if strings.Contains(d, "mtime=") {
			t.Errorf("%s: %s, want mtime 0", p, d)
		}
	}
	cf, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the epoch", cf.Created)
	}

	ctx := t.TempDir()
	copyTree(t, filepath.Join(root, "bundle"), filepath.Join(ctx, "bundle"), 0o644)
	f := filepath.Join(ctx, "bundle", "metadata", "annotations.yaml")
	b2, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(b2, "# changed\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := build(spec{name: "x/y:z", dockerfile: filepath.Join(root, "bundle.Dockerfile"), context: ctx}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(t, c) == digestOf(t, a) {
		t.Error("a changed file left the digest as it was")
	}
}

// TestBundleImageIsWhatBundleDockerfileMakes: the bundle's files under
// /manifests, /metadata and /tests/scorecard, and the LABELs as config
// labels.
func TestBundleImageIsWhatBundleDockerfileMakes(t *testing.T) {
	img, err := build(spec{name: "x/bundle:v1", dockerfile: filepath.Join(root, "bundle.Dockerfile"), context: root}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	fs := listing(t, img)
	for _, want := range []string{
		"manifests/mydeployment-operator.clusterserviceversion.yaml",
		"metadata/annotations.yaml",
		"tests/scorecard/config.yaml",
	} {
		if fs[want] != "file 644 0:0" {
			t.Errorf("%s: %q, want a file 644 0:0", want, fs[want])
		}
	}
	for _, dir := range []string{"manifests", "metadata", "tests", "tests/scorecard"} {
		if fs[dir] != "dir 755 0:0" {
			t.Errorf("%s: %q, want a dir 755 0:0", dir, fs[dir])
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels["operators.operatorframework.io.bundle.mediatype.v1"]; got != "registry+v1" {
		t.Errorf("mediatype label %q", got)
	}
	if fmt.Sprint(cf.Config.Env) != "[PATH="+defaultPath+"]" {
		t.Errorf("env %v, want the default PATH buildah and BuildKit give a FROM scratch image", cf.Config.Env)
	}
	if got := cf.Config.Labels["operators.operatorframework.io.test.config.v1"]; got != "tests/scorecard/" {
		t.Errorf("test config label %q", got)
	}
	if layers, _ := img.Layers(); len(layers) != 3 {
		t.Errorf("%d layers, want 3 (one per COPY)", len(layers))
	}
}

// TestDockerfileInstructions: ARG from a build arg in COPY's source, a file
// to a path, a directory into a directory, ENV, USER, ENTRYPOINT, EXPOSE;
// RUN refused.
func TestDockerfileInstructions(t *testing.T) {
	ctx := t.TempDir()
	write := func(p, s string, perm os.FileMode) {
		p = filepath.Join(ctx, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), perm); err != nil {
			t.Fatal(err)
		}
	}
	write("dist/app-linux-arm64", "binary", 0o755)
	write("conf/a.yaml", "a", 0o600)
	write("conf/sub/b.yaml", "b", 0o644)
	write("Dockerfile", `# a comment
FROM scratch
ARG TARGETARCH
COPY dist/app-linux-${TARGETARCH} /usr/local/bin/app
COPY conf /etc/app/
ENV PATH=/usr/local/bin \
    MODE=test
LABEL a=b "c"="d e"
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/app"]
CMD ["--flag"]
`, 0o644)
	img, err := build(spec{name: "x/app:v1", dockerfile: filepath.Join(ctx, "Dockerfile"), context: ctx, args: map[string]string{"TARGETARCH": "arm64"}}, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"usr":                "dir 755 0:0",
		"usr/local":          "dir 755 0:0",
		"usr/local/bin":      "dir 755 0:0",
		"usr/local/bin/app":  "file 755 0:0",
		"etc":                "dir 755 0:0",
		"etc/app":            "dir 755 0:0",
		"etc/app/a.yaml":     "file 644 0:0",
		"etc/app/sub":        "dir 755 0:0",
		"etc/app/sub/b.yaml": "file 644 0:0",
	}
	got := listing(t, img)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files:\n got %v\nwant %v", got, want)
	}
	cf, _ := img.ConfigFile()
	c := cf.Config
	if c.User != "65532:65532" || fmt.Sprint(c.Entrypoint) != "[/usr/local/bin/app]" || fmt.Sprint(c.Cmd) != "[--flag]" ||
		fmt.Sprint(c.Env) != "[PATH=/usr/local/bin MODE=test]" || c.Labels["a"] != "b" || c.Labels["c"] != "d e" {
		t.Errorf("config: %+v", c)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	if cf.Architecture != "arm64" || cf.OS != "linux" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if len(cf.History) != 8 {
		t.Errorf("%d history entries, want one per instruction after FROM and ARG (8)", len(cf.History))
	}

	write("Dockerfile", "FROM scratch\nRUN echo hi\n", 0o644)
	if _, err := build(spec{name: "x/y:z", dockerfile: filepath.Join(ctx, "Dockerfile"), context: ctx}, "amd64"); err == nil || !strings.Contains(err.Error(), "RUN") {
		t.Errorf("RUN: %v, want an error naming it", err)
	}
	write("Dockerfile", "FROM alpine\n", 0o644)
	if _, err := build(spec{name: "x/y:z", dockerfile: filepath.Join(ctx, "Dockerfile"), context: ctx}, "amd64"); err == nil {
		t.Error("FROM alpine built")
	}
}

// TestCatalogServes: with opm= the catalog image runs `opm serve` on the
// directory its configs label names, as user 1001, with the health probe
// OLM v0 execs and a /tmp for the cache.
func TestCatalogServes(t *testing.T) {
	ctx := t.TempDir()
	for p, s := range map[string]string{"opm": "opm", "probe": "probe", "dist/catalog/pkg/index.yaml": "schema: olm.package\n"} {
		p = filepath.Join(ctx, p)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		perm := os.FileMode(0o755)
		if strings.HasSuffix(p, ".yaml") {
			perm = 0o644
		}
		if err := os.WriteFile(p, []byte(s), perm); err != nil {
			t.Fatal(err)
		}
	}
	sp := spec{name: "x/catalog:v1", dockerfile: filepath.Join(root, "catalog.Dockerfile"), context: ctx,
		opm: filepath.Join(ctx, "opm"), healthProbe: filepath.Join(ctx, "probe")}
	img, err := build(sp, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	fs := listing(t, img)
	for p, want := range map[string]string{
		"bin/opm":                "file 755 0:0",
		"bin/grpc_health_probe":  "file 755 0:0",
		"tmp":                    "dir 1777 0:0",
		"configs/pkg/index.yaml": "file 644 0:0",
		"etc/nsswitch.conf":      "file 644 0:0",
	} {
		if fs[p] != want {
			t.Errorf("%s: %q, want %q", p, fs[p], want)
		}
	}
	cf, _ := img.ConfigFile()
	c := cf.Config
	if fmt.Sprint(c.Entrypoint) != "[/bin/opm]" || fmt.Sprint(c.Cmd) != "[serve /configs --cache-dir=/tmp/cache --cache-enforce-integrity=false]" || c.User != "1001" ||
		c.Labels[configsLabel] != "/configs" || fmt.Sprint(c.Env) != "[PATH="+defaultPath+"]" {
		t.Errorf("config: %+v", c)
	}
}

// TestMirrorRef: the repository path and tag stay, the host goes: where
// containerd asks a mirror of the original host.
func TestMirrorRef(t *testing.T) {
	for in, want := range map[string]string{
		"mydeployment.io/mydeployment-operator:v0.3.0":          "127.0.0.1:5001/mydeployment-operator:v0.3.0",
		"mydeployment.io/mydeployment-operator-bundle:v0.2.0":   "127.0.0.1:5001/mydeployment-operator-bundle:v0.2.0",
		"quay.io/operator-framework/opm:latest":                 "127.0.0.1:5001/operator-framework/opm:latest",
		"nginx:1.27":                                            "127.0.0.1:5001/library/nginx:1.27",
		"mydeployment.io/app@sha256:" + strings.Repeat("a", 64): "127.0.0.1:5001/app@sha256:" + strings.Repeat("a", 64),
	} {
		got, err := mirrorRef(in, "127.0.0.1:5001")
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestRunPushes: run pushes to a registry where GET
// /v2/<repository>/manifests/<tag> finds the image by the path of its
// name, and writes "NAME DIGEST" lines.
func TestRunPushes(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "images.txt")
	name := "mydeployment.io/mydeployment-operator-bundle:v9.9.9"
	if err := run(io.Discard, strings.TrimPrefix(srv.URL, "http://"), out, "amd64", false, []string{name + ",file=" + filepath.Join(root, "bundle.Dockerfile") + ",context=" + root}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || fields[0] != name || !strings.HasPrefix(fields[1], "sha256:") {
		t.Fatalf("images.txt: %q", b)
	}
	resp, err := http.Get(srv.URL + "/v2/mydeployment-operator-bundle/manifests/v9.9.9?ns=mydeployment.io")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Docker-Content-Digest") != fields[1] {
		t.Errorf("GET the manifest as containerd asks a mirror: %s, digest %q, want 200 and %s", resp.Status, resp.Header.Get("Docker-Content-Digest"), fields[1])
	}
}

// TestDigestOnly: -digest-only prints each image as its repository (tag
// dropped, host kept) at the digest build gives, pushes nothing and writes
// nothing; arch= overrides -arch for its image.
func TestDigestOnly(t *testing.T) {
	name := "mydeployment.io/mydeployment-operator-bundle:v9.9.9"
	file := filepath.Join(root, "bundle.Dockerfile")
	img, err := build(spec{name: name, dockerfile: file, context: root}, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(&out, "", "", "amd64", true, []string{name + ",file=" + file + ",context=" + root + ",arch=arm64"}); err != nil {
		t.Fatal(err)
	}
	want := "mydeployment.io/mydeployment-operator-bundle@" + digestOf(t, img).String() + "\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestRunPushesByDigest: push=digest pushes an image under its repository
// and digest, not its tag (the linux/amd64 manager the CSV names, on a
// host of another architecture, beside that host's manager under the tag).
func TestRunPushesByDigest(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "images.txt")
	name := "mydeployment.io/mydeployment-operator-bundle:v9.9.9"
	arg := name + ",file=" + filepath.Join(root, "bundle.Dockerfile") + ",context=" + root + ",arch=amd64,push=digest"
	if err := run(io.Discard, strings.TrimPrefix(srv.URL, "http://"), out, "arm64", false, []string{arg}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || fields[0] != "mydeployment.io/mydeployment-operator-bundle@"+fields[1] {
		t.Fatalf("images.txt: %q, want the name by digest and the digest", b)
	}
	get := func(ref string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/mydeployment-operator-bundle/manifests/"+ref, nil)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(fields[1]); code != 200 {
		t.Errorf("GET by digest: %d, want 200", code)
	}
	if code := get("v9.9.9"); code != 404 {
		t.Errorf("GET by tag: %d, want 404 (push=digest leaves the tag to the host's image)", code)
	}
	if _, err := parseSpec(name + ",file=x,push=tag"); err == nil {
		t.Error("push=tag parsed")
	}
}

// TestByDigest: the repository as written (a registry's port kept, a
// Docker Hub name left short), the tag or digest replaced by the digest.
func TestByDigest(t *testing.T) {
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("b", 64)}
	for in, want := range map[string]string{
		"mydeployment.io/mydeployment-operator:v0.3.0": "mydeployment.io/mydeployment-operator@" + d.String(),
		"localhost:5000/a/b:c":                         "localhost:5000/a/b@" + d.String(),
		"localhost:5000/a/b":                           "localhost:5000/a/b@" + d.String(),
		"me/op:v1":                                     "me/op@" + d.String(),
		"mydeployment.io/app@sha256:" + strings.Repeat("a", 64): "mydeployment.io/app@" + d.String(),
	} {
		got, err := byDigest(in, d)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestRunWritesArchive: tar=PATH writes the image as a docker-archive that
// names it by its tag and holds the very image built (what ctr image import
// reads on the real node).
func TestRunWritesArchive(t *testing.T) {
	name := "mydeployment.io/realnode/test:v1"
	file := filepath.Join(root, "bundle.Dockerfile")
	path := filepath.Join(t.TempDir(), "sub", "image.tar")
	if err := run(io.Discard, "", "", "amd64", false, []string{name + ",file=" + file + ",context=" + root + ",tar=" + path}); err != nil {
		t.Fatal(err)
	}
	tag, err := gcrname.NewTag(name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("read %s as a docker-archive holding %s: %v", path, name, err)
	}
	want, err := build(spec{name: name, dockerfile: file, context: root}, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := configOf(t, got), configOf(t, want); g != w {
		t.Errorf("the archive's image config is %s, want %s", g, w)
	}
}

func configOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
