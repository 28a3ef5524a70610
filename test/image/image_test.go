// Package image checks, with no container runtime, that the manager image
// is built for every platform from a binary of that platform: the
// Dockerfile takes the architecture from BuildKit, make docker-buildx
// builds one binary per platform before its one buildx build, and the
// binaries are named as the Dockerfile copies them and are of their
// platform's architecture. What needs docker buildx itself (the build and
// the push) is not run here.
package image

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// TestDockerfileTakesEachPlatformsArchitecture: the architecture comes from
// BuildKit's automatic TARGETARCH, which a default value on the ARG would
// override for every platform (docker/buildx#510): each image would copy
// the same binary.
func TestDockerfileTakesEachPlatformsArchitecture(t *testing.T) {
	for _, file := range []string{"Dockerfile", "scorecard.Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if m := regexp.MustCompile(`(?m)^ARG TARGETARCH=.*$`).FindString(text); m != "" {
			t.Errorf("%s: %q: a default overrides the architecture buildx gives each platform; declare ARG TARGETARCH alone", file, m)
		}
		if !regexp.MustCompile(`(?m)^ARG TARGETARCH$`).MatchString(text) || !strings.Contains(text, "-linux-${TARGETARCH} ") {
			t.Errorf("%s does not copy a binary named after TARGETARCH", file)
		}
	}
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ignore), "\n!dist/manager-linux-*\n") {
		t.Error(".dockerignore keeps dist/manager-linux-* out of the build context")
	}
}

// TestDockerBuildxBuildsEveryPlatformsBinaryFirst reads what make would run
// (make -n): the binaries of PLATFORMS, then one buildx build of the same
// platforms that pushes, with no command whose failure make would ignore.
func TestDockerBuildxBuildsEveryPlatformsBinaryFirst(t *testing.T) {
	platforms := "linux/arm64,linux/s390x"
	out, err := exec.Command("make", "-C", root, "-n", "docker-buildx", "PLATFORMS="+platforms, "IMG=example.com/md:v1").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n docker-buildx: %v\n%s", err, out)
	}
	steps := string(out)
	bins := strings.Index(steps, "hack/manager-binaries.sh "+platforms+"\n")
	build := strings.Index(steps, "buildx build --builder mydeployment-operator-builder --platform="+platforms+" --push --tag example.com/md:v1 .")
	if bins < 0 || build < 0 || bins > build {
		t.Errorf("want the binaries of %s built, then one buildx build of them that pushes; make -n says:\n%s", platforms, steps)
	}
	recipe := regexp.MustCompile(`(?ms)^docker-buildx:.*?\n\n`).FindString(mustRead(t, filepath.Join(root, "Makefile")))
	if recipe == "" {
		t.Fatal("no docker-buildx rule in the Makefile")
	}
	if m := regexp.MustCompile(`(?m)^\t-`).FindString(recipe); m != "" {
		t.Errorf("docker-buildx ignores the failure of a command (a recipe line starting with -):\n%s", recipe)
	}
}

// TestBuildahPushesFromTheStoreItBuildsInto reads what make would run
// (make -n) for every image's build and push with CONTAINER_TOOL=buildah:
// the builds go into the project's own store (BUILDAH_ROOT: vfs, chroot),
// so each push must name that same store, or buildah looks in its system
// store and fails with "image not known".
func TestBuildahPushesFromTheStoreItBuildsInto(t *testing.T) {
	out, err := exec.Command("make", "-C", root, "-n", "--no-print-directory",
		"docker-build", "bundle-build", "scorecard-image-build", "docker-push", "bundle-push", "catalog-push", "scorecard-image-push",
		"CONTAINER_TOOL=buildah", "IMAGE_TAG_BASE=example.com/md", "BUILDAH_ROOT=/tmp/store").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	// buildah's global options come before its subcommand.
	command := regexp.MustCompile(`(?m)^buildah ((?:--\S+ \S+ )*)(bud|push) .*$`)
	stores := map[string][]string{}
	for _, m := range command.FindAllStringSubmatch(string(out), -1) {
		stores[m[2]] = append(stores[m[2]], strings.TrimSpace(m[1]))
	}
	if len(stores["bud"]) != 3 || len(stores["push"]) != 4 {
		t.Fatalf("want 3 buildah builds and 4 pushes; make -n says:\n%s", out)
	}
	want := stores["bud"][0]
	if !strings.Contains(want, "--root /tmp/store/root") || !strings.Contains(want, "--storage-driver vfs") {
		t.Errorf("buildah builds with %q, want the vfs store under BUILDAH_ROOT", want)
	}
	for verb, got := range stores {
		for _, g := range got {
			if g != want {
				t.Errorf("buildah %s uses the store %q, the builds %q: the image is not where it looks; make -n says:\n%s", verb, g, want, out)
			}
		}
	}
}

// TestManagerBinariesRefuseWhatTheyCannotBuild: a platform that is not
// linux/<an architecture Go builds> stops hack/manager-binaries.sh with an
// error naming it, before anything is built (so make docker-buildx builds
// no image). The cross-compiles themselves (each binary checked to be a
// static linux binary of its architecture, by the script) are not run
// here: cold, one takes longer than a go test's default timeout on a
// small machine.
func TestManagerBinariesRefuseWhatTheyCannotBuild(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join("hack", "manager-binaries.sh")
	for _, bad := range []string{"windows/amd64", "linux/vax", "linux/arm64,darwin/arm64"} {
		cmd := exec.Command(script, bad, dir)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "cannot build platform") {
			t.Errorf("%s %s: err %v, output %q; want a failure naming the platform", script, bad, err, out)
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
