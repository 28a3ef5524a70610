// Command nettool is the test image of the local cluster's real node
// (hack/real-node.sh check): one static binary, packed FROM scratch by its
// Dockerfile (hack/images), that plays a server, a client and an in-cluster API
// client, so the checks need no image from a registry.
//
//	nettool serve [ADDR]   HTTP server (default :8080): / answers "hello from
//	                       <hostname>", /healthz "ok"; logs every request and
//	                       exits 0 on SIGTERM
//	nettool get URL        GET URL, print the body; exit 1 unless 200
//	nettool apiserver      in-cluster config (the pod's service account, the
//	                       kubernetes Service): print the API server's version
//	                       and who the API server says we are
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

func main() {
	log.SetFlags(log.LstdFlags | log.LUTC)
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		addr := ":8080"
		if len(os.Args) > 2 {
			addr = os.Args[2]
		}
		err = serve(addr)
	case "get":
		if len(os.Args) != 3 {
			usage()
		}
		err = get(os.Args[2])
	case "apiserver":
		err = apiserver()
	default:
		usage()
	}
	if err != nil {
		log.Fatal(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: nettool serve [ADDR] | get URL | apiserver")
	os.Exit(2)
}

func serve(addr string) error {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		log.Print("signal received: shutting down")
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("serving on %s as %s", addr, host)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func get(url string) error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Print(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// apiserver talks to the API server as a pod does: rest.InClusterConfig reads
// KUBERNETES_SERVICE_HOST/PORT (the kubernetes Service's ClusterIP) and the
// service account's token and CA; the TLS handshake checks the API server's
// certificate against that ClusterIP.
func apiserver() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	client.Timeout = 10 * time.Second
	fmt.Printf("in-cluster config: %s\n", cfg.Host)

	resp, err := client.Get(cfg.Host + "/version")
	if err != nil {
		return err
	}
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := decode(resp, &version); err != nil {
		return fmt.Errorf("GET /version: %w", err)
	}
	fmt.Printf("API server version: %s\n", version.GitVersion)

	// A SelfSubjectReview is allowed to every authenticated user: it says
	// the token was accepted and whose it is.
	review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	resp, err = client.Post(cfg.Host+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json", bytes.NewReader(review))
	if err != nil {
		return err
	}
	var who struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := decode(resp, &who); err != nil {
		return fmt.Errorf("POST selfsubjectreviews: %w", err)
	}
	fmt.Printf("authenticated as: %s\n", who.Status.UserInfo.Username)
	return nil
}

func decode(resp *http.Response, into any) error {
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return json.Unmarshal(body, into)
}
