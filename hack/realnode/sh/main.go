// Command sh is a static /bin/sh, built from Go source, for the two
// containers of the registry pod `operator-sdk run bundle` starts for a
// file-based catalog (internal/olm/operator/registry/fbcindex/
// fbc_registry_pod.go in operator-sdk v1.42.3), on images built FROM scratch
// that have no shell:
//
//   - the init container, run in --decompression-image (by default
//     registry.access.redhat.com/ubi9/ubi:9.8, which nothing here can pull):
//
//     sh -c 'for dir in /compressed<root>/*configmap-partition*; do for f in ${dir}/*; do file="${f%.*}";file="${file#/compressed}";cat ${f} | gzip -d -c > "${file}";done;done;'
//
//     An image of this binary alone (its Dockerfile) can be that image.
//
//   - the main container, run in the index image
//     (quay.io/operator-framework/opm by default): `sh -c "opm serve <root> -p 50051"`.
//     This binary as /bin/sh beside /bin/opm makes the opm image able to run it.
//
// It is mvdan.cc/sh/v3's interpreter (bash syntax, POSIX semantics where
// they differ) with the core utilities run in process by
// mvdan.cc/sh/x/coreutils (u-root's cat, cp, ls, mkdir, mv, rm, ...) but for
// gzip, gunzip, gzcat and zcat, which are this package's own (gzip.go: u-root's
// gzip cannot decompress a pipe to stdout, as the init container needs), and
// sleep (sleep.go: coreutils has none; the tests' hook Jobs wait with it).
// Any other command is a program found on PATH, run as a child.
//
// Usage: sh [-eux...] [-c SCRIPT [NAME [ARG...]] | FILE [ARG...]]; with
// neither, the script is read from stdin. The exit status is the script's.
//
// The interpreter cannot exec(2) in place: `exec CMD` and a script's last
// command run CMD as a child, and the shell exits with its status when it
// ends. So that a container runtime's stop still reaches the program, the
// shell forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to every child it is
// running; after such a signal it exits, as soon as its last child has
// ended, with that child's status (128+N if the child died of signal N),
// and at once with 128+N if it runs none.
//
// Run as tar (argv[0]), it is tar.go's tar: x or t, z, v, f FILE, C DIR, for
// the init container of `operator-sdk scorecard`'s test pods.
//
// It is not a general shell: no job control, no interactive mode, no traps
// on signals (trap handles EXIT and ERR only), and as PID 1 it does not reap
// orphaned grandchildren (opm serve forks none). Use it for short scripts like
// the two above.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
	"mvdan.cc/sh/x/coreutils"
)

// defaultPath is the PATH a child gets when the environment has none: the
// one an image built from scratch is given (docs/images.md).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// forwarded are the signals sent on to the children; each also ends the shell.
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

func main() {
	if filepath.Base(os.Args[0]) == "tar" {
		os.Exit(tarMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	s := newShell()
	s.forwardSignals()
	os.Exit(s.run(os.Args[1:], nil, os.Stdin, os.Stdout, os.Stderr))
}

// shell runs one script and keeps track of the children it starts.
type shell struct {
	mu       sync.Mutex
	children map[*os.Process]bool
	starting int       // children being started, not yet in children
	caught   os.Signal // the first forwarded signal caught, nil before
	exit     func(int) // os.Exit
}

func newShell() *shell {
	return &shell{children: map[*os.Process]bool{}, exit: os.Exit}
}

// forwardSignals catches the forwarded signals for the whole process.
func (s *shell) forwardSignals() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, forwarded...)
	go func() {
		for sig := range ch {
			s.signal(sig)
		}
	}()
}

// signal sends sig to every child; with none running or starting the shell
// ends at once, as a shell without a trap dies of the signal.
func (s *shell) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caught == nil {
		s.caught = sig
	}
	for p := range s.children {
		_ = p.Signal(sig)
	}
	if len(s.children) == 0 && s.starting == 0 {
		s.exit(signalStatus(s.caught))
	}
}

func signalStatus(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + int(syscall.SIGTERM)
}

// run runs the shell with args (without argv[0]) and env (os.Environ() if
// nil), and returns its exit status.
func (s *shell) run(args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, command, hasCommand, operands, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\nusage: sh [-eux...] [-c SCRIPT [NAME [ARG...]] | FILE [ARG...]]\n", err)
		return 2
	}
	name := "sh"
	var script io.Reader
	switch {
	case hasCommand:
		script = strings.NewReader(command)
		if len(operands) > 0 {
			name, operands = operands[0], operands[1:]
		}
	case len(operands) > 0:
		name, operands = operands[0], operands[1:]
		b, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintf(stderr, "sh: %v\n", err)
			return 127
		}
		script = strings.NewReader(string(b))
	default:
		script = stdin
	}
	if env == nil {
		env = os.Environ()
	}
	file, err := syntax.NewParser().Parse(script, name)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\n", err)
		return 2
	}
	r, err := s.newRunner(env, "", append(append(opts, "--"), operands...), stdin, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\n", err)
		return 2
	}
	return status(r.Run(context.Background(), file), stderr)
}

// parseArgs splits the arguments into interpreter options (-e, +x, -o
// pipefail, ...), the -c script and the operands.
func parseArgs(args []string) (opts []string, command string, hasCommand bool, operands []string, err error) {
	for len(args) > 0 {
		a := args[0]
		if a == "--" || a == "-" {
			args = args[1:]
			break
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		args = args[1:]
		for _, c := range a[1:] {
			switch {
			case c == 'c' && a[0] == '-':
				hasCommand = true
			case c == 'o':
				if len(args) == 0 {
					return nil, "", false, nil, fmt.Errorf("%co needs an option name", a[0])
				}
				opts = append(opts, string(a[0])+"o", args[0])
				args = args[1:]
			default:
				opts = append(opts, string(a[0])+string(c))
			}
		}
	}
	if hasCommand {
		if len(args) == 0 {
			return nil, "", false, nil, errors.New("-c requires an argument")
		}
		command, args = args[0], args[1:]
	}
	return opts, command, hasCommand, args, nil
}

// status turns the interpreter's result into an exit status.
func status(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if code, ok := interp.IsExitStatus(err); ok {
		return int(code)
	}
	fmt.Fprintf(stderr, "sh: %v\n", err)
	return 1
}

// newRunner makes an interpreter whose commands are, in this order, the
// shell's built-ins, gzip.go's gzip, sleep.go's sleep, the coreutils and
// programs on PATH.
func (s *shell) newRunner(env []string, dir string, params []string, stdin io.Reader, stdout, stderr io.Writer) (*interp.Runner, error) {
	hasPath := false
	for _, kv := range env {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	if !hasPath {
		env = append(env[:len(env):len(env)], "PATH="+defaultPath)
	}
	return interp.New(
		interp.Env(expand.ListEnviron(env...)),
		interp.Dir(dir),
		interp.Params(params...),
		interp.StdIO(stdin, stdout, stderr),
		interp.ExecHandlers(gzipHandler, sleepHandler, coreutils.ExecHandler, s.execHandler),
	)
}

// execHandler runs a program found on PATH as a child, as interp's
// DefaultExecHandler does, but known to the shell for signal forwarding and
// never killed by a context: only a forwarded signal stops it.
func (s *shell) execHandler(interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		hc := interp.HandlerCtx(ctx)
		path, err := interp.LookPathDir(hc.Dir, hc.Env, args[0])
		if err != nil {
			fmt.Fprintln(hc.Stderr, err)
			return interp.ExitStatus(127)
		}
		env := execEnv(hc.Env)
		newCmd := func() *exec.Cmd {
			return &exec.Cmd{Path: path, Args: args, Env: env, Dir: hc.Dir,
				Stdin: hc.Stdin, Stdout: hc.Stdout, Stderr: hc.Stderr}
		}

		s.mu.Lock()
		if s.caught != nil {
			s.mu.Unlock()
			return interp.ExitStatus(signalStatus(s.caught))
		}
		s.starting++
		s.mu.Unlock()

		cmd := newCmd()
		err = cmd.Start()
		// A program just written may still be open for writing in a
		// concurrently forked process (go.dev/issue/22315): retry briefly.
		for delay := time.Millisecond; errors.Is(err, syscall.ETXTBSY) && delay < 300*time.Millisecond; delay *= 2 {
			time.Sleep(delay)
			cmd = newCmd()
			err = cmd.Start()
		}

		s.mu.Lock()
		s.starting--
		if err == nil {
			s.children[cmd.Process] = true
			if s.caught != nil {
				_ = cmd.Process.Signal(s.caught)
			}
		} else if s.caught != nil && len(s.children) == 0 && s.starting == 0 {
			s.exit(signalStatus(s.caught))
		}
		s.mu.Unlock()

		if errors.Is(err, syscall.ENOEXEC) {
			// A file without #! is a script for a new shell (POSIX).
			return s.runScript(hc, path, args)
		}
		if err != nil {
			fmt.Fprintln(hc.Stderr, err)
			return interp.ExitStatus(126)
		}

		code := 0
		if err := cmd.Wait(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				fmt.Fprintln(hc.Stderr, err)
				code = 1
			} else if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		}

		s.mu.Lock()
		delete(s.children, cmd.Process)
		if s.caught != nil && len(s.children) == 0 && s.starting == 0 {
			// The shell was told to stop and waited for its child: it
			// ends now with the child's status, as if it had exec'd it.
			s.exit(code)
		}
		s.mu.Unlock()
		if code != 0 {
			return interp.ExitStatus(code)
		}
		return nil
	}
}

// runScript runs the file at path, which the kernel refused to execute, as
// a script of a new shell with the exported variables.
func (s *shell) runScript(hc interp.HandlerContext, path string, args []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(126)
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(string(b)), args[0])
	if err != nil {
		fmt.Fprintf(hc.Stderr, "sh: %v\n", err)
		return interp.ExitStatus(2)
	}
	r, err := s.newRunner(execEnv(hc.Env), hc.Dir, append([]string{"--"}, args[1:]...), hc.Stdin, hc.Stdout, hc.Stderr)
	if err != nil {
		return err
	}
	return r.Run(context.Background(), file)
}

// execEnv is the environment of a child: the exported variables, as
// interp's own (unexported) execEnv makes it. A variable the script unset
// can come first from the parent environment, set: it is then dropped.
func execEnv(env expand.Environ) []string {
	var list []string
	for name, v := range env.Each {
		if !v.IsSet() {
			for i, kv := range list {
				if strings.HasPrefix(kv, name+"=") {
					list[i] = ""
				}
			}
		}
		if v.Exported && v.Kind == expand.String {
			list = append(list, name+"="+v.String())
		}
	}
	return slices.DeleteFunc(list, func(kv string) bool { return kv == "" })
}
