package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Who made a request, told apart by user agent (every component uses the
// same admin certificate in a kwokctl cluster).
const (
	whoRaw        = "raw"
	whoKCMDeploy  = "kcm-deployment-replicaset" // kcm's deployment and replicaset controllers
	whoKCMOther   = "kcm-other"                 // the rest of kcm: garbage collector, leader election, ...
	whoManager    = "manager"                   // our bin/manager
	whoScheduler  = "scheduler"
	whoKwok       = "kwok"
	whoDriver     = "bench-driver"
	whoOther      = "other"
	allRequesters = "all"
)

// requests counts API requests: by requester, then by verb ("patch") and by
// verb and resource ("patch pods/status").
type requests map[string]map[string]int

func (r requests) add(who, key string) {
	if r[who] == nil {
		r[who] = map[string]int{}
	}
	r[who][key]++
}

// writeVerbs are the verbs that change something.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// writes sums who's write verbs.
func (r requests) writes(who string) int {
	n := 0
	for verb, c := range r[who] {
		if writeVerbs[verb] {
			n += c
		}
	}
	return n
}

func (r requests) total(who string) int {
	n := 0
	for k, c := range r[who] {
		if !strings.Contains(k, " ") {
			n += c
		}
	}
	return n
}

type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

func requester(ua string) string {
	switch {
	case strings.HasPrefix(ua, uaRaw):
		return whoRaw
	case strings.HasPrefix(ua, uaDriver):
		return whoDriver
	case strings.HasPrefix(ua, "manager/"):
		return whoManager
	case strings.HasPrefix(ua, "kube-controller-manager/"):
		// kcm appends the controller's name: ".../deployment-controller".
		if strings.HasSuffix(ua, "/deployment-controller") || strings.HasSuffix(ua, "/replicaset-controller") {
			return whoKCMDeploy
		}
		return whoKCMOther
	case strings.HasPrefix(ua, "kube-scheduler/"):
		return whoScheduler
	case strings.HasPrefix(ua, "kwok"):
		return whoKwok
	}
	return whoOther
}

// countRequests reads the audit log, with the backups kube-apiserver
// rotated it into (every 100 MB: audit-<time>.log beside it), and counts,
// for each window, the requests received inside it.
func countRequests(path string, windows []*window) ([]requests, error) {
	out := make([]requests, len(windows))
	for i := range out {
		out[i] = requests{}
	}
	backups, err := filepath.Glob(strings.TrimSuffix(path, ".log") + "-*.log")
	if err != nil {
		return nil, err
	}
	for _, p := range append(backups, path) {
		// A backup rotated before the first window began holds none of
		// its requests (a run counts each round's windows as it ends).
		if fi, err := os.Stat(p); err == nil && p != path && len(windows) > 0 && fi.ModTime().Before(windows[0].Start) {
			continue
		}
		if err := countFile(p, windows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func countFile(path string, windows []*window, out []requests) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.ObjectRef == nil {
			continue
		}
		for i, w := range windows {
			if ev.Received.After(w.End) {
				w.AuditCovered = true
			}
			if ev.Received.Before(w.Start) || ev.Received.After(w.End) {
				continue
			}
			who := requester(ev.UserAgent)
			res := ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				res += "/" + ev.ObjectRef.Subresource
			}
			for _, k := range []string{who, allRequesters} {
				out[i].add(k, ev.Verb)
				out[i].add(k, ev.Verb+" "+res)
			}
		}
	}
	return sc.Err()
}

// keepAudit copies the audit log and the backups it was rotated into to dir
// (audit.log, audit-<time>.log), for reading a run's timeline afterwards.
func keepAudit(path, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	backups, err := filepath.Glob(strings.TrimSuffix(path, ".log") + "-*.log")
	if err != nil {
		return err
	}
	for _, p := range append(backups, path) {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, filepath.Base(p)), data); err != nil {
			return err
		}
	}
	return nil
}
