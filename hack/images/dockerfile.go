package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// instruction is one Dockerfile instruction: its keyword (upper case), its
// arguments as written (continuations joined) and its line.
type instruction struct {
	cmd  string
	args string
	line int
}

// parseDockerfile reads the instructions of a Dockerfile: comments and
// blank lines dropped, lines ending in a backslash joined with the next.
func parseDockerfile(r io.Reader) ([]instruction, error) {
	var out []instruction
	s := bufio.NewScanner(r)
	var cur strings.Builder
	start, n := 0, 0
	for s.Scan() {
		n++
		line := strings.TrimSpace(s.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	return out, nil
}

// fileEntry is one entry of a layer: a path in the image (no leading
// slash), what it is, and where its content comes from on the host.
type fileEntry struct {
	name   string // path in the image, without the leading slash
	dir    bool
	link   string // symlink target, if a symlink
	mode   int64
	uid    int
	gid    int
	source string // host file, for a regular file
	data   []byte // content, for a regular file without source
}

// stage is an image being assembled: its layers (one per COPY, as a
// Dockerfile makes them) and its config, as the instructions set them.
type stage struct {
	layers    [][]fileEntry
	createdBy []string // the instruction that made each layer
	history   []historyEntry
	labels    map[string]string
	env       []string
	user      string
	workdir   string
	entry     []string
	cmd       []string
	ports     map[string]struct{}
}

type historyEntry struct {
	createdBy  string
	emptyLayer bool
}

func newStage() *stage {
	return &stage{labels: map[string]string{}}
}

// defaultPath is the PATH docker build (BuildKit) and buildah give an image
// built FROM scratch.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func (st *stage) hasEnv(k string) bool {
	for _, kv := range st.env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// setEnv sets one variable in env (KEY=value, replacing an earlier one).
func (st *stage) setEnv(k, v string) {
	for i, kv := range st.env {
		if strings.HasPrefix(kv, k+"=") {
			st.env[i] = k + "=" + v
			return
		}
	}
	st.env = append(st.env, k+"="+v)
}

func (st *stage) note(createdBy string) {
	st.history = append(st.history, historyEntry{createdBy: createdBy, emptyLayer: true})
}

func (st *stage) addLayer(createdBy string, entries []fileEntry) {
	st.layers = append(st.layers, entries)
	st.createdBy = append(st.createdBy, createdBy)
	st.history = append(st.history, historyEntry{createdBy: createdBy})
}

// applyDockerfile runs the instructions of a Dockerfile that builds FROM
// scratch, with files from contextDir: what COPY, LABEL, ENV, ARG, USER,
// WORKDIR, EXPOSE, ENTRYPOINT and CMD do in docker build, nothing that
// needs a container (RUN) or a base image. buildArgs are the --build-arg
// values.
func (st *stage) applyDockerfile(dockerfile, contextDir string, buildArgs map[string]string) error {
	f, err := os.Open(dockerfile)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	instrs, err := parseDockerfile(f)
	if err != nil {
		return fmt.Errorf("%s: %w", dockerfile, err)
	}
	vars := map[string]string{}
	for _, kv := range st.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	expand := func(s string) string { return os.Expand(s, func(k string) string { return vars[k] }) }
	from := false
	for _, in := range instrs {
		fail := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s: %s", dockerfile, in.line, in.cmd, fmt.Sprintf(format, a...))
		}
		if !from && in.cmd != "FROM" && in.cmd != "ARG" {
			return fail("before FROM")
		}
		createdBy := in.cmd + " " + in.args
		switch in.cmd {
		case "FROM":
			if from {
				return fail("one stage only")
			}
			if in.args != "scratch" {
				return fail("only FROM scratch can be built without a base image, not %q", in.args)
			}
			from = true
			// buildah and BuildKit give an image from scratch the default
			// PATH (a runtime resolves a command without a slash with it).
			if !st.hasEnv("PATH") {
				st.setEnv("PATH", defaultPath)
				vars["PATH"] = defaultPath
			}
		case "ARG":
			k, def, hasDef := strings.Cut(in.args, "=")
			v, given := buildArgs[k]
			if !given && hasDef {
				v = expand(strings.Trim(def, `"`))
			}
			vars[k] = v
		case "ENV":
			pairs, err := keyValues(in.args)
			if err != nil {
				return fail("%v", err)
			}
			for _, kv := range pairs {
				vars[kv[0]] = expand(kv[1])
				st.setEnv(kv[0], vars[kv[0]])
			}
			st.note(createdBy)
		case "LABEL":
			pairs, err := keyValues(in.args)
			if err != nil {
				return fail("%v", err)
			}
			for _, kv := range pairs {
				st.labels[expand(kv[0])] = expand(kv[1])
			}
			st.note(createdBy)
		case "USER":
			st.user = expand(in.args)
			st.note(createdBy)
		case "WORKDIR":
			st.workdir = path.Join("/", st.workdir, expand(in.args))
			st.note(createdBy)
		case "EXPOSE":
			if st.ports == nil {
				st.ports = map[string]struct{}{}
			}
			for _, p := range strings.Fields(expand(in.args)) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				st.ports[p] = struct{}{}
			}
			st.note(createdBy)
		case "ENTRYPOINT", "CMD":
			var argv []string
			if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
				return fail("only the exec form ([\"...\"]) runs without a shell: %v", err)
			}
			if in.cmd == "ENTRYPOINT" {
				st.entry, st.cmd = argv, nil // docker build: ENTRYPOINT resets CMD
			} else {
				st.cmd = argv
			}
			st.note(createdBy)
		case "COPY":
			entries, err := st.copyEntries(contextDir, expand(in.args))
			if err != nil {
				return fail("%v", err)
			}
			st.addLayer(createdBy, entries)
		default:
			return fail("not supported without a container runtime")
		}
	}
	if !from {
		return fmt.Errorf("%s: no FROM", dockerfile)
	}
	return nil
}

// keyValues splits "k=v k2=\"v 2\"" (or the old "k v" form) into pairs.
func keyValues(s string) ([][2]string, error) {
	words, err := splitWords(s)
	if err != nil {
		return nil, err
	}
	if len(words) > 0 && !strings.Contains(words[0], "=") {
		k, v, _ := strings.Cut(s, " ")
		return [][2]string{{k, strings.TrimSpace(v)}}, nil
	}
	var out [][2]string
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", w)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}

// splitWords splits on blanks outside double quotes, dropping the quotes.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			inQuote, inWord = !inQuote, true
		case (c == ' ' || c == '\t') && !inQuote:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// copyEntries is what COPY [--chown=U:G] [--chmod=MODE] SRC... DEST puts in
// its layer: a directory source's contents go into DEST, a file goes to
// DEST, or into DEST when it ends in / or there are several sources;
// parent directories are added.
func (st *stage) copyEntries(contextDir, args string) ([]fileEntry, error) {
	var words []string
	if strings.HasPrefix(args, "[") {
		if err := json.Unmarshal([]byte(args), &words); err != nil {
			return nil, err
		}
	} else {
		words = strings.Fields(args)
	}
	uid, gid := 0, 0
	chmod := int64(-1)
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		switch k {
		case "chown":
			u, g, ok := strings.Cut(v, ":")
			if !ok {
				g = u
			}
			if _, err := fmt.Sscanf(u+" "+g, "%d %d", &uid, &gid); err != nil {
				return nil, fmt.Errorf("--chown=%s: only numeric ids (there is no /etc/passwd)", v)
			}
		case "chmod":
			if _, err := fmt.Sscanf(v, "%o", &chmod); err != nil {
				return nil, fmt.Errorf("--chmod=%s: %v", v, err)
			}
		default:
			return nil, fmt.Errorf("flag --%s not supported", k)
		}
		words = words[1:]
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("want SRC... DEST")
	}
	srcs, dest := words[:len(words)-1], words[len(words)-1]
	if !path.IsAbs(dest) {
		slash := strings.HasSuffix(dest, "/")
		dest = path.Join("/", st.workdir, dest)
		if slash {
			dest += "/"
		}
	}
	var sources []string
	for _, s := range srcs {
		matches, err := filepath.Glob(filepath.Join(contextDir, filepath.FromSlash(s)))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no such file in the context %s", s, contextDir)
		}
		sort.Strings(matches)
		sources = append(sources, matches...)
	}
	intoDir := strings.HasSuffix(dest, "/") || len(sources) > 1
	files := map[string]fileEntry{}
	add := func(e fileEntry) {
		e.uid, e.gid = uid, gid
		if chmod >= 0 && e.link == "" {
			e.mode = chmod
		}
		files[e.name] = e
	}
	for _, src := range sources {
		fi, err := os.Stat(src) // a source named in COPY is followed if a symlink
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			target := dest
			if intoDir {
				target = path.Join(dest, filepath.Base(src))
			}
			add(fileEntry{name: strings.TrimPrefix(path.Clean(target), "/"), mode: fileMode(fi.Mode()), source: src})
			continue
		}
		root := strings.TrimPrefix(path.Clean(dest), "/")
		err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(src, p)
			if err != nil {
				return err
			}
			name := path.Join(root, filepath.ToSlash(rel))
			if name == "" || name == "." {
				return nil // the image's root
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			switch {
			case d.IsDir():
				add(fileEntry{name: name, dir: true, mode: 0o755})
			case info.Mode()&os.ModeSymlink != 0:
				link, err := os.Readlink(p)
				if err != nil {
					return err
				}
				add(fileEntry{name: name, link: link, mode: 0o777})
			case info.Mode().IsRegular():
				add(fileEntry{name: name, mode: fileMode(info.Mode()), source: p})
			default:
				return fmt.Errorf("%s: not a file, directory or symlink", p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return withParents(files), nil
}

// fileMode is the mode a file gets in the image: 0755 if the host file is
// executable by anyone, else 0644, whatever the umask of the checkout.
func fileMode(m os.FileMode) int64 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// withParents adds the parent directories (0755, root) that are missing,
// and sorts the entries by name, so every layer lists its entries in one
// order (parents first).
func withParents(files map[string]fileEntry) []fileEntry {
	for name := range files {
		for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := files[d]; !ok {
				files[d] = fileEntry{name: d, dir: true, mode: 0o755}
			}
		}
	}
	out := make([]fileEntry, 0, len(files))
	for _, e := range files {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
