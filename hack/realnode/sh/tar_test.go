package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tarGz is an archive like the one operator-sdk scorecard puts in its
// ConfigMap: directories, files, and here a symbolic link too.
func tarGz(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		body := ""
		if h.Typeflag == tar.TypeReg {
			body = "content of " + h.Name
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func bundleArchive(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	writeFile(t, path, tarGz(t,
		&tar.Header{Name: "manifests/", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "manifests/csv.yaml", Typeflag: tar.TypeReg, Mode: 0o644},
		&tar.Header{Name: "metadata/annotations.yaml", Typeflag: tar.TypeReg, Mode: 0o644},
		&tar.Header{Name: "metadata/link.yaml", Typeflag: tar.TypeSymlink, Linkname: "annotations.yaml"},
	))
	return path
}

// TestTarScorecardUntar runs the scorecard test pod's init container's
// command, `tar xvzf /scorecard/bundle.tar.gz -C /scorecard-bundle`, with
// other paths.
func TestTarScorecardUntar(t *testing.T) {
	archive, dir := bundleArchive(t), t.TempDir()
	var out, errb bytes.Buffer
	if code := tarMain([]string{"xvzf", archive, "-C", dir}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "manifests/\nmanifests/csv.yaml\nmetadata/annotations.yaml\nmetadata/link.yaml\n"; out.String() != want {
		t.Errorf("verbose output %q, want %q", out.String(), want)
	}
	for name, want := range map[string]string{
		"manifests/csv.yaml": "content of manifests/csv.yaml", "metadata/annotations.yaml": "content of metadata/annotations.yaml",
		"metadata/link.yaml": "content of metadata/annotations.yaml",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "metadata/link.yaml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("metadata/link.yaml is not a symbolic link: %v %v", fi, err)
	}

	// The same with dashes and separate options, and listing.
	out.Reset()
	if code := tarMain([]string{"-t", "-z", "-f", archive}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "manifests/csv.yaml") {
		t.Errorf("tar -t -z -f: exit %d, %q", code, out.String())
	}
}

// TestTarRefuses: entries leaving the directory, and what it does not do.
func TestTarRefuses(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []*tar.Header
		want    string
	}{
		{"dot-dot", []*tar.Header{{Name: "../escaped", Typeflag: tar.TypeReg, Mode: 0o644}}, "leaves the directory"},
		{"absolute", []*tar.Header{{Name: "/etc/escaped", Typeflag: tar.TypeReg, Mode: 0o644}}, "leaves the directory"},
		{"link out", []*tar.Header{{Name: "a/l", Typeflag: tar.TypeSymlink, Linkname: "../../x"}}, "its link ../../x leaves"},
		{"device", []*tar.Header{{Name: "dev", Typeflag: tar.TypeChar}}, "not supported"},
	} {
		path := filepath.Join(t.TempDir(), "a.tar.gz")
		writeFile(t, path, tarGz(t, c.entries...))
		var out, errb bytes.Buffer
		if code := tarMain([]string{"xzf", path, "-C", t.TempDir()}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", c.name, code, errb.String(), c.want)
		}
	}
	for _, args := range [][]string{{"cf", "x.tar"}, {"xz"}, {"xzf"}, {"xt", "-f", "a"}, {"xf", "a", "member"}} {
		var out, errb bytes.Buffer
		if code := tarMain(args, nil, &out, &errb); code != 2 || errb.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and a message", args, code, errb.String())
		}
	}
}

// TestTarByName: the built binary, run by the name tar (as the image's
// /bin/tar), is tar; run as sh it is still the shell.
func TestTarByName(t *testing.T) {
	bin := shBinary(t)
	link := filepath.Join(t.TempDir(), "tar")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	archive, dir := bundleArchive(t), t.TempDir()
	out, err := exec.Command(link, "xvzf", archive, "-C", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("tar xvzf: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifests", "csv.yaml")); err != nil {
		t.Error(err)
	}
}
