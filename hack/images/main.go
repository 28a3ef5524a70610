// Command images builds the project's container images from their
// Dockerfiles with no container runtime and no base image (every one is
// FROM scratch), reproducibly, and pushes them to a registry:
//
//	go run ./hack/images -registry 127.0.0.1:5001 -out bin/local/images.txt \
//	  'NAME,file=Dockerfile,context=.,arg=TARGETARCH=amd64' ...
//
// Each argument is one image: its name as a cluster would pull it (the name
// the bundle and catalog use, e.g. mydeployment.io/mydeployment-operator:v0.3.0),
// then comma-separated options:
//
//	file=PATH       the Dockerfile (FROM scratch; COPY, LABEL, ENV, ARG, USER,
//	                WORKDIR, EXPOSE, ENTRYPOINT, CMD: nothing that runs a container)
//	context=DIR     the build context (default .)
//	arg=K=V         a --build-arg (repeatable)
//	opm=PATH        start from an opm base instead of empty: PATH as /bin/opm,
//	                grpc-health-probe=PATH as /bin/grpc_health_probe, a /tmp
//	                anyone can write, user 1001, what quay.io/operator-framework/opm
//	                has; the image then serves the catalog its
//	                operators.operatorframework.io.index.configs.v1 label names
//	                (`opm serve /configs --cache-dir=/tmp/cache
//	                --cache-enforce-integrity=false`: the cache is built at start)
//	arch=ARCH       this image's architecture, when not -arch's
//	push=digest     push it under its repository and digest only, not its tag
//	                (a second architecture of an image whose tag names another:
//	                the linux/amd64 manager the CSV names, on a host of another)
//
// Every file's mtime, the created time and the history's times are the Unix
// epoch, owners are root unless COPY --chown says, file modes are 0644 or
// 0755 (executable), and entries are sorted: the same inputs give the same
// digests. An image is pushed to the registry under its repository path
// without its host (mydeployment.io/mydeployment-operator:v0.3.0 goes to
// REGISTRY/mydeployment-operator:v0.3.0), which is where containerd asks a
// mirror configured for mydeployment.io (docs/images.md). The name and
// digest of each image are printed and written to -out, one "NAME DIGEST" a
// line.
//
// With -digest-only nothing is pushed and each image is printed as its
// repository and digest, one a line and nothing else:
//
//	go run ./hack/images -digest-only -arch amd64 \
//	  'mydeployment.io/mydeployment-operator:v0.3.0,file=Dockerfile,arg=TARGETARCH=amd64'
//	mydeployment.io/mydeployment-operator@sha256:...
//
// which is how make bundle names the manager in the CSV (hack/images.sh digest).
//
// tar=PATH writes the image also as a docker-archive tarball at PATH, tagged
// with its name, for `ctr image import` (or `docker load`): the real node of
// the local cluster (hack/real-node.sh) imports its sandbox image this way,
// needing no registry.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// spec is one image to build, parsed from an argument.
type spec struct {
	name        string
	dockerfile  string
	context     string
	args        map[string]string
	opm         string
	healthProbe string
	arch        string // empty: -arch
	byDigest    bool   // push=digest
	tar         string // tar=PATH: also written there as a docker-archive
}

func parseSpec(s string) (spec, error) {
	parts := strings.Split(s, ",")
	sp := spec{name: parts[0], context: ".", args: map[string]string{}}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return sp, fmt.Errorf("%s: %q is not key=value", sp.name, p)
		}
		switch k {
		case "file":
			sp.dockerfile = v
		case "context":
			sp.context = v
		case "arg":
			ak, av, ok := strings.Cut(v, "=")
			if !ok {
				return sp, fmt.Errorf("%s: arg=%s is not K=V", sp.name, v)
			}
			sp.args[ak] = av
		case "opm":
			sp.opm = v
		case "grpc-health-probe":
			sp.healthProbe = v
		case "arch":
			sp.arch = v
		case "tar":
			sp.tar = v
		case "push":
			if v != "digest" {
				return sp, fmt.Errorf("%s: push=%s: only push=digest", sp.name, v)
			}
			sp.byDigest = true
		default:
			return sp, fmt.Errorf("%s: unknown option %q", sp.name, k)
		}
	}
	if sp.dockerfile == "" {
		return sp, fmt.Errorf("%s: no file=DOCKERFILE", sp.name)
	}
	if (sp.opm == "") != (sp.healthProbe == "") {
		return sp, fmt.Errorf("%s: opm= and grpc-health-probe= go together", sp.name)
	}
	if _, err := name.ParseReference(sp.name); err != nil {
		return sp, err
	}
	return sp, nil
}

// configsLabel is where a file-based catalog image keeps its catalog.
const configsLabel = "operators.operatorframework.io.index.configs.v1"

// build builds the image a spec describes, for linux/arch.
func build(sp spec, arch string) (v1.Image, error) {
	st := newStage()
	if sp.opm != "" {
		opmBase(st, sp.opm, sp.healthProbe)
	}
	if err := st.applyDockerfile(sp.dockerfile, sp.context, sp.args); err != nil {
		return nil, err
	}
	if sp.opm != "" {
		dir := st.labels[configsLabel]
		if dir == "" {
			return nil, fmt.Errorf("%s: opm= serves a catalog, but %s has no %s label", sp.name, sp.dockerfile, configsLabel)
		}
		// What `opm generate dockerfile` writes, serve the catalog with its
		// cache in /tmp/cache, but the cache built at start, not in the
		// image: with --cache-dir, opm (v1.73) refuses to start unless the
		// cache is already there and matches (what that Dockerfile's RUN
		// opm serve --cache-only makes), and opm's cache files differ from
		// one build to the next, so an image that held one would never be
		// reproducible. The catalog is small: the cache takes about a second.
		st.entry = []string{"/bin/opm"}
		st.cmd = []string{"serve", dir, "--cache-dir=/tmp/cache", "--cache-enforce-integrity=false"}
		b, _ := json.Marshal(st.cmd)
		st.note("CMD " + string(b))
	}
	return st.image(arch)
}

// opmBase is what the catalog serves from, as quay.io/operator-framework/opm
// has it: /bin/opm, /bin/grpc_health_probe (OLM v0 probes its registry pods
// with `grpc_health_probe -addr=:50051`), /etc/nsswitch.conf, a /tmp anyone
// may write (opm serve's cache), user 1001, the default PATH (holding /bin).
// No shell.
func opmBase(st *stage, opm, probe string) {
	files := map[string]fileEntry{
		"bin/opm":               {name: "bin/opm", mode: 0o755, source: opm},
		"bin/grpc_health_probe": {name: "bin/grpc_health_probe", mode: 0o755, source: probe},
		"etc/nsswitch.conf":     {name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		"tmp":                   {name: "tmp", dir: true, mode: 0o1777},
	}
	st.addLayer("opm base: /bin/opm, /bin/grpc_health_probe, /etc/nsswitch.conf, /tmp", withParents(files))
	st.setEnv("PATH", defaultPath)
	st.note("ENV PATH=" + defaultPath)
	st.user = "1001"
	st.note("USER 1001")
}

// mirrorRef is where an image named ref is pushed in registry: the same
// repository path and tag, without the original host.
func mirrorRef(ref, registry string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	sep := ":"
	if _, ok := r.(name.Digest); ok {
		sep = "@"
	}
	return name.ParseReference(registry+"/"+r.Context().RepositoryStr()+sep+r.Identifier(), name.Insecure)
}

// byDigest is the image named ref, by digest: its repository as written
// (host included, or left out as written) and the digest, its tag or digest
// dropped (mydeployment.io/mydeployment-operator:v0.3.0 is
// mydeployment.io/mydeployment-operator@sha256:...).
func byDigest(ref string, digest v1.Hash) (string, error) {
	repo, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	d, err := name.NewDigest(repo + "@" + digest.String())
	if err != nil {
		return "", fmt.Errorf("%s by digest: %w", ref, err)
	}
	return d.String(), nil
}

func main() {
	registry := flag.String("registry", "", "host:port of the registry to push to (plain HTTP); empty: build only")
	out := flag.String("out", "", "file to write \"NAME DIGEST\" lines to")
	arch := flag.String("arch", runtime.GOARCH, "architecture of the images (their binaries must match)")
	digestOnly := flag.Bool("digest-only", false, "push nothing: print each image as REPOSITORY@DIGEST, one a line and nothing else")
	flag.Parse()
	if *digestOnly && (*registry != "" || *out != "") {
		fmt.Fprintln(os.Stderr, "images: -digest-only pushes and writes nothing: no -registry, no -out")
		os.Exit(2)
	}
	if err := run(os.Stdout, *registry, *out, *arch, *digestOnly, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// run builds every image the args describe; with digestOnly it prints each
// to w as REPOSITORY@DIGEST and stops there, else it pushes each to
// registry (if not empty), prints what it did to w and writes out (if not
// empty).
func run(w io.Writer, registry, out, arch string, digestOnly bool, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no image to build")
	}
	var specs []spec
	for _, a := range args {
		sp, err := parseSpec(a)
		if err != nil {
			return err
		}
		specs = append(specs, sp)
	}
	var lines []string
	for _, sp := range specs {
		a := arch
		if sp.arch != "" {
			a = sp.arch
		}
		img, err := build(sp, a)
		if err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		ref := sp.name
		if digestOnly || sp.byDigest {
			if ref, err = byDigest(sp.name, digest); err != nil {
				return err
			}
		}
		if digestOnly {
			_, _ = fmt.Fprintln(w, ref)
			continue
		}
		where := "not pushed"
		if sp.tar != "" {
			if err := writeArchive(sp.tar, sp.name, img); err != nil {
				return err
			}
			where = "written to " + sp.tar
		}
		if registry != "" {
			dst, err := mirrorRef(ref, registry)
			if err != nil {
				return err
			}
			if err := remote.Write(dst, img); err != nil {
				return fmt.Errorf("push %s: %w", dst, err)
			}
			where = "pushed to " + dst.String()
		}
		_, _ = fmt.Fprintf(w, "%s %s (linux/%s, %s)\n", ref, digest, a, where)
		lines = append(lines, ref+" "+digest.String())
	}
	if out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	return nil
}

// writeArchive writes img to path as a docker-archive tagged ref.
func writeArchive(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("tar=%s: %s is not a tag: %w", path, ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
