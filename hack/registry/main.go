// Command registry is the project's local image registry: go-containerregistry's
// registry (pkg/registry) over plain HTTP, its blobs on disk and its
// manifests and tags too, so what was pushed survives a restart. make
// local-registry starts it in the background; make images pushes to it.
//
//	registry -addr 127.0.0.1:5001 -dir bin/local/registry
//
// Under -dir: blobs/sha256/<hex> (the registry's disk blob handler),
// manifests/sha256/<hex> (every manifest pushed) and manifests.jsonl, one
// line per manifest put or delete, in order; at start every line is
// replayed into the registry (an index after the manifests it lists, as
// they were pushed).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5001", "address to listen on (plain HTTP)")
	dir := flag.String("dir", "", "directory holding the blobs and manifests")
	tlsAddr := flag.String("tls-addr", "", "also serve HTTPS here (e.g. 127.0.51.1:443), the same store")
	tlsDir := flag.String("tls-dir", "", "where the CA (ca.crt: what clients trust) and the serving pair are kept, made the first time (default DIR/../registry-tls)")
	tlsNames := flag.String("tls-names", "", "comma-separated names the serving certificate is for (the hosts this registry stands in for)")
	flag.Parse()
	logger := log.New(os.Stderr, "", log.LstdFlags)
	if *dir == "" {
		logger.Fatal("-dir is required")
	}
	h, err := newPersistent(*dir, logger)
	if err != nil {
		logger.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	var tlsSrv *http.Server
	if *tlsAddr != "" {
		d := *tlsDir
		if d == "" {
			d = filepath.Join(filepath.Dir(filepath.Clean(*dir)), "registry-tls")
		}
		cert, err := serving(d, strings.FieldsFunc(*tlsNames, func(r rune) bool { return r == ',' || r == ' ' }))
		if err != nil {
			logger.Fatalf("-tls-addr: %v", err)
		}
		tln, err := net.Listen("tcp", *tlsAddr)
		if err != nil {
			logger.Fatal(err)
		}
		tlsSrv = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
		logger.Printf("serving HTTPS on %s as %s (CA %s)", tln.Addr(), *tlsNames, filepath.Join(d, caCertFile))
		go func() {
			if err := tlsSrv.ServeTLS(tln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Fatal(err)
			}
		}()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		logger.Printf("got %v, stopping", sig)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if tlsSrv != nil {
			_ = tlsSrv.Shutdown(ctx)
		}
		_ = srv.Shutdown(ctx)
	}()
	logger.Printf("serving on %s, storing in %s", ln.Addr(), *dir)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Fatal(err)
	}
	h.close()
}

// journalEntry is one line of manifests.jsonl.
type journalEntry struct {
	Op          string `json:"op"` // put or delete
	Repo        string `json:"repo"`
	Ref         string `json:"ref"` // tag or digest
	ContentType string `json:"contentType,omitempty"`
	Digest      string `json:"digest,omitempty"`
}

// persistent is the registry with its manifest puts and deletes journaled.
type persistent struct {
	reg     http.Handler
	dir     string
	mu      sync.Mutex
	journal *os.File
	log     *log.Logger
}

func newPersistent(dir string, logger *log.Logger) (*persistent, error) {
	blobs := filepath.Join(dir, "blobs")
	for _, d := range []string{blobs, filepath.Join(dir, "manifests", "sha256")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	p := &persistent{
		reg: registry.New(registry.Logger(logger), registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs))),
		dir: dir,
		log: logger,
	}
	if err := p.replay(); err != nil {
		return nil, err
	}
	j, err := os.OpenFile(filepath.Join(dir, "manifests.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p.journal = j
	return p, nil
}

func (p *persistent) close() { _ = p.journal.Close() }

// manifestPath splits /v2/<repo>/manifests/<ref>; ok is false for any
// other path.
func manifestPath(path string) (repo, ref string, ok bool) {
	elems := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(elems) < 4 || elems[0] != "v2" || elems[len(elems)-2] != "manifests" {
		return "", "", false
	}
	return strings.Join(elems[1:len(elems)-2], "/"), elems[len(elems)-1], true
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (p *persistent) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	repo, ref, ok := manifestPath(req.URL.Path)
	if !ok || (req.Method != http.MethodPut && req.Method != http.MethodDelete) {
		p.reg.ServeHTTP(w, req)
		return
	}
	// One manifest write at a time, journaled in the order applied.
	p.mu.Lock()
	defer p.mu.Unlock()
	var body []byte
	if req.Method == http.MethodPut {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	p.reg.ServeHTTP(sw, req)
	var e journalEntry
	switch {
	case req.Method == http.MethodPut && sw.status == http.StatusCreated:
		h, _, err := v1.SHA256(bytes.NewReader(body))
		if err != nil {
			p.log.Printf("journal: %v", err)
			return
		}
		if err := writeFileAtomic(filepath.Join(p.dir, "manifests", h.Algorithm, h.Hex), body); err != nil {
			p.log.Printf("journal: %v", err)
			return
		}
		e = journalEntry{Op: "put", Repo: repo, Ref: ref, ContentType: req.Header.Get("Content-Type"), Digest: h.String()}
	case req.Method == http.MethodDelete && sw.status == http.StatusAccepted:
		e = journalEntry{Op: "delete", Repo: repo, Ref: ref}
	default:
		return
	}
	line, _ := json.Marshal(e)
	if _, err := p.journal.Write(append(line, '\n')); err != nil {
		p.log.Printf("journal: %v", err)
	}
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// replay puts every journaled manifest back into the registry, in order.
func (p *persistent) replay() error {
	f, err := os.Open(filepath.Join(p.dir, "manifests.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	n, failed := 0, 0
	for s.Scan() {
		var e journalEntry
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			failed++ // a line cut short by a crash
			continue
		}
		url := fmt.Sprintf("/v2/%s/manifests/%s", e.Repo, e.Ref)
		var req *http.Request
		if e.Op == "put" {
			h, err := v1.NewHash(e.Digest)
			if err != nil {
				failed++
				continue
			}
			body, err := os.ReadFile(filepath.Join(p.dir, "manifests", h.Algorithm, h.Hex))
			if err != nil {
				failed++
				continue
			}
			req = httptest.NewRequest(http.MethodPut, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", e.ContentType)
		} else {
			req = httptest.NewRequest(http.MethodDelete, url, nil)
		}
		rec := httptest.NewRecorder()
		p.reg.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			failed++
			continue
		}
		n++
	}
	if err := s.Err(); err != nil {
		return err
	}
	p.log.Printf("restored %d manifest operations from %s (%d failed)", n, f.Name(), failed)
	return nil
}
