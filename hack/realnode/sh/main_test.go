package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
	"mvdan.cc/sh/x/coreutils"
)

// initContainerScript is the init container's command, built exactly as
// addGZIPInitContainer in internal/olm/operator/registry/fbcindex/
// fbc_registry_pod.go of operator-sdk v1.42.3 builds it (root is the
// pod's FBCIndexRootDir, "/<catalogsource>-configs").
func initContainerScript(root string) string {
	return fmt.Sprintf(`for dir in /compressed%s/*configmap-partition*; do `, root) +
		`for f in ${dir}/*; do ` +
		`file="${f%.*}";` +
		`file="${file#/compressed}";` +
		`cat ${f} | gzip -d -c > "${file}";` +
		"done;" +
		"done;"
}

// mainContainerCommand is the main container's `sh -c` argument, from
// podForBundleRegistry in the same file: `opm serve %s -p %d`.
func mainContainerCommand(root string, port int32) string {
	return fmt.Sprintf(`opm serve %s -p %d`, root, port)
}

// TestMain makes the test binary a stand-in program when STANDIN_MODE is
// set (linked into a PATH directory as opm, say), so no other binary needs
// building:
//
//	record  write its arguments and stdin to $STANDIN_LOG, "out" to stdout
//	        and "err" to stderr, and exit $STANDIN_EXIT
//	serve   print "ready", wait for SIGTERM, print "terminated" and exit 0
//	die     print "ready" and wait, dying of the first signal
func TestMain(m *testing.M) {
	switch os.Getenv("STANDIN_MODE") {
	case "":
		code := m.Run()
		if binPath != "" {
			_ = os.RemoveAll(filepath.Dir(binPath))
		}
		os.Exit(code)
	case "record":
		in, _ := io.ReadAll(os.Stdin)
		_ = os.WriteFile(os.Getenv("STANDIN_LOG"), []byte(strings.Join(os.Args, "\n")+"\n--stdin--\n"+string(in)), 0o644)
		fmt.Print("out")
		fmt.Fprint(os.Stderr, "err")
		code, _ := strconv.Atoi(os.Getenv("STANDIN_EXIT"))
		os.Exit(code)
	case "serve":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		fmt.Println("ready")
		<-ch
		fmt.Println("terminated")
		os.Exit(0)
	case "die":
		fmt.Println("ready")
		time.Sleep(time.Hour)
	}
	os.Exit(3)
}

// standinPath makes a directory with the test binary linked as each name,
// for PATH.
func standinPath(t *testing.T, names ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(self, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runSh runs the shell in process.
func runSh(t *testing.T, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = newShell().run(args, withCoverDir(t, env), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// withCoverDir gives the stand-ins (this test binary, run again) a
// GOCOVERDIR: built with -cover (make test-unit's -coverprofile), a binary
// without one writes "warning: GOCOVERDIR not set" to the stderr the tests
// compare.
func withCoverDir(t *testing.T, env []string) []string {
	t.Helper()
	return append(env, "GOCOVERDIR="+t.TempDir())
}

func gz(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fbc returns a file-based catalog of n bundles, as a partition holds it.
func fbc(n int, pkg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n", pkg)
	for i := range n {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\nname: %s.v0.%d.0\npackage: %s\nimage: mydeployment.io/%s-bundle:v0.%d.0\n", pkg, i, pkg, pkg, i)
	}
	return b.String()
}

// partitions lays out what the registry pod's containers see for catalog
// source "cs": under compressed (the pod's /compressed<root>) each
// partition's ConfigMap volume, under root (the pod's <root>) each
// partition's empty unzip directory. It returns the contents wanted at each
// decompressed path under root. Partition 1 is a regular file; partition 2
// is a symbolic link into a ..data directory, as kubelet's atomic writer
// lays out a ConfigMap volume, and big enough that the pipe fills.
func partitions(t *testing.T, compressed, root string) (want map[string]string) {
	t.Helper()
	want = map[string]string{}
	for i, content := range []string{fbc(3, "small"), fbc(20000, "big")} {
		part := fmt.Sprintf("cs-configmap-partition-%d", i+1)
		dir := compressed + "/" + part
		gzPath := dir + "/extraFBC.yaml.gz"
		if i == 1 {
			writeFile(t, dir+"/..data/extraFBC.yaml.gz", gz(t, content))
			if err := os.Symlink("..data/extraFBC.yaml.gz", gzPath); err != nil {
				t.Fatal(err)
			}
		} else {
			writeFile(t, gzPath, gz(t, content))
		}
		if err := os.MkdirAll(root+"/"+part, 0o755); err != nil {
			t.Fatal(err)
		}
		want[root+"/"+part+"/extraFBC.yaml"] = content
	}
	return want
}

// initContainerLayout lays out the partitions under tmp, with the pod's
// FBCIndexRootDir at tmp/cs-configs, and returns that root, the init
// script with its "/compressed" moved to tmp+"/compressed" (the only
// change), and the contents wanted.
func initContainerLayout(t *testing.T, tmp string) (root, script string, want map[string]string) {
	t.Helper()
	root = filepath.Join(tmp, "cs-configs")
	compressed := filepath.Join(tmp, "compressed")
	want = partitions(t, compressed+root, root)
	script = initContainerScript(root)
	script = strings.ReplaceAll(script, "/compressed", compressed)
	if strings.Count(script, compressed) != 2 {
		t.Fatalf("expected /compressed twice in the init script: %s", script)
	}
	return root, script, want
}

func checkDecompressed(t *testing.T, root string, want map[string]string) {
	t.Helper()
	for path, content := range want {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		if string(b) != content {
			t.Errorf("%s: %d bytes, want %d (the decompressed partition)", path, len(b), len(content))
		}
	}
	// Nothing else is written: one file per partition.
	var n int
	_ = filepath.WalkDir(root, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n != len(want) {
		t.Errorf("%d files under %s, want %d", n, root, len(want))
	}
}

func TestInitContainerScript(t *testing.T) {
	tmp := t.TempDir()
	root, script, want := initContainerLayout(t, tmp)
	// PATH empty of programs: cat and gzip must run in process.
	code, out, errOut := runSh(t, []string{"PATH=" + t.TempDir()}, "", "-c", script)
	if code != 0 || out != "" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	checkDecompressed(t, root, want)
}

// TestInitContainerScriptFails: a corrupt partition fails the init container
// (the loop's status is the last pipeline's, gzip's), as with GNU gzip.
func TestInitContainerScriptFails(t *testing.T) {
	tmp := t.TempDir()
	_, script, _ := initContainerLayout(t, tmp)
	writeFile(t, tmp+"/compressed"+tmp+"/cs-configs/cs-configmap-partition-2/..data/extraFBC.yaml.gz", []byte("not a gzip stream at all"))
	code, _, errOut := runSh(t, []string{"PATH=" + t.TempDir()}, "", "-c", script)
	if code != 1 || errOut != "gzip: -: gzip: invalid header\n" {
		t.Fatalf("exit %d, stderr %q; want 1 and gzip's error", code, errOut)
	}
}

// TestExpansions: the parameter expansions the init script uses.
func TestExpansions(t *testing.T) {
	code, out, errOut := runSh(t, nil, "", "-c",
		`f=/compressed/cs-configs/cs-configmap-partition-1/extraFBC.yaml.gz; file="${f%.*}"; file="${file#/compressed}"; echo "$file"`)
	if code != 0 || out != "/cs-configs/cs-configmap-partition-1/extraFBC.yaml\n" || errOut != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestGzip: gzip -d -c from a pipe and a file, gzip -c, and the in-place
// forms; the data go through the handler, not the process's stdin.
func TestGzip(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/a.gz", gz(t, "alpha\n"))
	env := []string{"PATH=" + t.TempDir()}
	for _, c := range []struct{ script, stdout string }{
		{`cat a.gz | gzip -d -c`, "alpha\n"},
		{`gzip -d -c a.gz`, "alpha\n"},
		{`gzip -dc < a.gz`, "alpha\n"},
		{`zcat a.gz; gzcat a.gz`, "alpha\nalpha\n"},
		{`echo beta | gzip -c | gzip -d -c`, "beta\n"},
		{`echo gamma | gzip -9 | gunzip`, "gamma\n"},
		{`echo delta > d && gzip d && test ! -e d && gunzip -k d.gz && test -e d.gz && cat d`, "delta\n"},
	} {
		code, out, errOut := runSh(t, env, "", "-c", "cd "+dir+" && "+c.script)
		if code != 0 || out != c.stdout {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", c.script, code, out, errOut, c.stdout)
		}
	}
}

// TestCoreutilsGzipCannotDecompressAPipe shows why gzip.go exists:
// mvdan.cc/sh/x/coreutils' gzip (u-root's) refuses `gzip -d -c` with no
// file (status 1), and with -f it decompresses the process's os.Stdin, not
// the pipe, so the init container's pipeline cannot work through it. If
// this fails after an upgrade, coreutils' gzip may do now.
func TestCoreutilsGzipCannotDecompressAPipe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/a.gz", gz(t, "alpha\n"))
	writeFile(t, dir+"/process-stdin.gz", gz(t, "the process's stdin\n"))
	f, err := os.Open(dir + "/process-stdin.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	for _, c := range []struct{ script, stdout, stderr string }{
		{`cat a.gz | gzip -d -c`, "", "ignoring stdout, use -f to compression"},
		{`cat a.gz | gzip -d -c -f`, "the process's stdin\n", ""},
	} {
		var out, errb bytes.Buffer
		r, err := interp.New(interp.Dir(dir), interp.StdIO(strings.NewReader(""), &out, &errb),
			interp.ExecHandlers(coreutils.ExecHandler))
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.NewParser().Parse(strings.NewReader(c.script), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		err = r.Run(t.Context(), prog)
		if out.String() != c.stdout || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("%s: stdout %q, stderr %q, err %v; want %q and %q", c.script, out.String(), errb.String(), err, c.stdout, c.stderr)
		}
	}
}

// TestMainContainerCommand: `sh -c "opm serve <root> -p 50051"` runs opm
// from PATH with those arguments and the shell's stdin, stdout and stderr,
// and so does `exec opm serve ...`.
func TestMainContainerCommand(t *testing.T) {
	path := standinPath(t, "opm")
	for _, prefix := range []string{"", "exec "} {
		log := filepath.Join(t.TempDir(), "log")
		env := []string{"PATH=/nonexistent:" + path, "STANDIN_MODE=record", "STANDIN_LOG=" + log, "STANDIN_EXIT=0"}
		code, out, errOut := runSh(t, env, "input", "-c", prefix+mainContainerCommand("/cs-configs", 50051))
		if code != 0 || out != "out" || errOut != "err" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", prefix, code, out, errOut)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if want := "opm\nserve\n/cs-configs\n-p\n50051\n--stdin--\ninput"; string(b) != want {
			t.Errorf("%q: opm got %q, want %q", prefix, b, want)
		}
	}
}

// TestExitStatus: the script's status is the shell's.
func TestExitStatus(t *testing.T) {
	path := standinPath(t, "opm")
	env := []string{"PATH=" + path, "STANDIN_MODE=record", "STANDIN_LOG=" + filepath.Join(t.TempDir(), "log"), "STANDIN_EXIT=42"}
	script := filepath.Join(t.TempDir(), "script")
	writeFile(t, script, []byte("echo \"$0 $1 $2\"\nexit 5\n"))
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"-c", "true"}, 0, ""},
		{[]string{"-c", "false"}, 1, ""},
		{[]string{"-c", "exit 3"}, 3, ""},
		{[]string{"-c", "opm serve /x -p 1"}, 42, "out"},
		{[]string{"-c", "exec opm serve /x -p 1; echo not reached"}, 42, "out"},
		{[]string{"-c", "opm; echo $?"}, 0, "out42\n"},
		{[]string{"-c", "no-such-command"}, 127, ""},
		{[]string{"-c", "if then"}, 2, ""},
		{[]string{"-e", "-c", "false; echo not reached"}, 1, ""},
		{[]string{"-ec", "false; echo not reached"}, 1, ""},
		{[]string{"-c", `echo "$0 $1 $2"`, "name", "one", "two"}, 0, "name one two\n"},
		{[]string{script, "a", "b"}, 5, script + " a b\n"},
		{[]string{"/nonexistent/script"}, 127, ""},
		{[]string{"-c"}, 2, ""},
	} {
		code, out, errOut := runSh(t, env, "", c.args...)
		if code != c.code || out != c.stdout {
			t.Errorf("sh %q: exit %d, stdout %q (stderr %q); want %d, %q", c.args, code, out, errOut, c.code, c.stdout)
		}
	}
	// The script on stdin.
	if code, out, _ := runSh(t, nil, "echo in; exit 4", nil...); code != 4 || out != "in\n" {
		t.Errorf("script on stdin: exit %d, stdout %q", code, out)
	}
}

// TestScriptWithoutShebang: a file the kernel will not execute runs as a
// script of a new shell (ENOEXEC), with the exported variables.
func TestScriptWithoutShebang(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/hello", []byte("echo \"hello $1 $X $Y\"; exit 6\n"))
	if err := os.Chmod(dir+"/hello", 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runSh(t, []string{"PATH=" + dir}, "", "-c", "export X=x; Y=y; hello world")
	if code != 6 || out != "hello world x \n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// shBinary builds the static binary once, as hack/real-node.sh's
// static_image builds its binaries, at the lowest priority.
func shBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "realnode-sh")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "sh")
		cmd := exec.Command("nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", "-ldflags=-s -w -buildid=", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestBinary: the built binary is static and runs the init container's
// script as the pod does, with no program on PATH.
func TestBinary(t *testing.T) {
	sh := shBinary(t)
	if !static(t, sh) {
		t.Errorf("%s has an ELF interpreter: not static", sh)
	}
	fi, err := os.Stat(sh)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes", sh, fi.Size())

	tmp := t.TempDir()
	root, script, want := initContainerLayout(t, tmp)
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"PATH=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("%v: %s", err, out)
	}
	checkDecompressed(t, root, want)
}

// startSh starts the binary with a script and waits for the stand-in's
// "ready" on stdout; it returns the command and the rest of stdout.
func startSh(t *testing.T, mode, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(shBinary(t), "-c", script)
	cmd.Env = withCoverDir(t, []string{"PATH=" + standinPath(t, "opm"), "STANDIN_MODE=" + mode})
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("stand-in: %q, %v", line, err)
	}
	return cmd, r
}

// waitStatus reads the rest of stdout and waits (at most 20 s in all) for
// cmd; it returns cmd's exit status and what was read.
func waitStatus(t *testing.T, cmd *exec.Cmd, stdout io.Reader) (int, string) {
	t.Helper()
	done := make(chan error, 1)
	var rest []byte
	go func() {
		rest, _ = io.ReadAll(stdout) // before Wait, which closes the pipe
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err == nil {
			return 0, string(rest)
		} else if errors.As(err, &ee) {
			return ee.ExitCode(), string(rest)
		}
		t.Fatal(err)
	case <-time.After(20 * time.Second):
		t.Fatal("sh did not exit within 20 s of SIGTERM")
	}
	return -1, ""
}

// TestSIGTERMForwarded: SIGTERM to the shell alone (as the container
// runtime sends it to PID 1) reaches the program it runs, with or without
// exec, and the shell exits with the program's status without running
// the rest of the script.
func TestSIGTERMForwarded(t *testing.T) {
	for _, c := range []struct {
		mode, script string
		code         int
		rest         string
	}{
		// opm serve stops on SIGTERM and exits 0.
		{"serve", "exec " + mainContainerCommand("/cs-configs", 50051), 0, "terminated\n"},
		{"serve", mainContainerCommand("/cs-configs", 50051), 0, "terminated\n"},
		{"serve", mainContainerCommand("/cs-configs", 50051) + "; echo after", 0, "terminated\n"},
		// A program that dies of it: 128+15.
		{"die", "exec opm serve", 143, ""},
		{"die", "opm serve; echo after", 143, ""},
		// In a pipeline, every program gets it.
		{"die", "opm serve | opm serve", 143, ""},
	} {
		t.Run(c.mode+" "+c.script, func(t *testing.T) {
			cmd, stdout := startSh(t, c.mode, c.script)
			if strings.Contains(c.script, "|") {
				// The second stand-in's "ready" went into the first's
				// stdin; give it time to start.
				time.Sleep(500 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code, rest := waitStatus(t, cmd, stdout)
			if code != c.code || rest != c.rest {
				t.Errorf("exit %d, then stdout %q; want %d, %q", code, rest, c.code, c.rest)
			}
		})
	}
}

// TestSIGTERMWithoutChild: with no program running (here the read
// built-in waits on stdin) the shell dies of SIGTERM at once: 143.
func TestSIGTERMWithoutChild(t *testing.T) {
	cmd := exec.Command(shBinary(t), "-c", "echo ready; read x; echo after")
	cmd.Env = []string{"PATH=" + t.TempDir()}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, rest := waitStatus(t, cmd, r)
	if code != 143 || rest != "" {
		t.Errorf("exit %d, then stdout %q; want 143 and nothing", code, rest)
	}
}

// TestBinaryInChroot runs the init container's script unchanged, as the
// pod's init container would: in a root holding only /bin/sh (the image
// its Dockerfile makes), /compressed/cs-configs/... and /cs-configs/...,
// with the image's default PATH; then the main container's command with a
// /bin/opm beside /bin/sh. It needs root (chroot).
func TestBinaryInChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	sh := shBinary(t)
	rootfs := t.TempDir()
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, rootfs+"/bin/sh", b)
	if err := os.Chmod(rootfs+"/bin/sh", 0o755); err != nil {
		t.Fatal(err)
	}
	want := partitions(t, rootfs+"/compressed/cs-configs", rootfs+"/cs-configs")
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", initContainerScript("/cs-configs")},
		Env:         []string{"PATH=" + defaultPath},
		Dir:         "/",
		SysProcAttr: &syscall.SysProcAttr{Chroot: rootfs},
	}
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("%v: %s", err, out)
	}
	checkDecompressed(t, rootfs+"/cs-configs", want)

	// The main container, as in an opm image with this sh as /bin/sh and
	// /bin/opm on the default PATH: here a #! script the kernel runs with
	// /bin/sh, a second process.
	writeFile(t, rootfs+"/bin/opm", []byte("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > /log; echo out; echo err >&2; exit 7\n"))
	if err := os.Chmod(rootfs+"/bin/opm", 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", mainContainerCommand("/cs-configs", 50051)},
		Env:         []string{"PATH=" + defaultPath},
		Dir:         "/",
		SysProcAttr: &syscall.SysProcAttr{Chroot: rootfs},
	}
	var ee *exec.ExitError
	if out, err := cmd.CombinedOutput(); !errors.As(err, &ee) || ee.ExitCode() != 7 || string(out) != "out\nerr\n" {
		t.Fatalf("%v: %s", err, out)
	}
	if b, err := os.ReadFile(rootfs + "/log"); err != nil || string(b) != "/bin/opm\nserve\n/cs-configs\n-p\n50051\n" {
		t.Errorf("opm got %q, %v", b, err)
	}
}

// static reports whether the ELF file at path has no interpreter.
func static(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
