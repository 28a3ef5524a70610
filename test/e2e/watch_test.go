package e2e

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// The specs' two ways of following objects as they change: the API
// server's pod watch (every event, in order, from a list's
// resourceVersion, so each prefix is a state etcd held), and kubectl get
// -w with a jsonpath (what a user would run). Each spec's watcher keeps
// what it needs of the stream.

// streamPods lists the pods of app (label app=<app>) in ns, then hands
// each watch event after that list to each, in order, from one goroutine,
// until stop; it returns the pods listed. stop returns once each is no
// longer called.
func streamPods(cs *kubernetes.Clientset, ns, app string, each func(watch.EventType, *corev1.Pod)) (listed []corev1.Pod, stop func()) {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{LabelSelector: "app=" + app}
	list, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	opts.ResourceVersion = list.ResourceVersion
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				each(ev.Type, pod)
			}
		}
	}()
	return list.Items, func() { cancel(); <-done }
}

// streamKubectl runs bin/kubectl with args (a get -w with an output that
// prints one line per version) and hands each line to each, in order,
// from one goroutine, until stop; stop returns once each is no longer
// called and kubectl has exited.
func streamKubectl(each func(line string), args ...string) (stop func()) {
	GinkgoHelper()
	cmd := exec.Command(filepath.Join(projectDir, "bin", "kubectl"), args...)
	out, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			each(lines.Text())
		}
	}()
	return func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	}
}

// lineLog keeps the lines of a kubectl watch, each only when it differs
// from the one before: the versions an object went through.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	stop  func()
}

// watchLines follows kubectl args (streamKubectl), each line turned into
// a version by version (nil: the line as it is).
func watchLines(version func(string) string, args ...string) *lineLog {
	GinkgoHelper()
	l := &lineLog{}
	l.stop = streamKubectl(func(line string) {
		if version != nil {
			line = version(line)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if n := len(l.lines); n == 0 || l.lines[n-1] != line {
			l.lines = append(l.lines, line)
		}
	}, args...)
	return l
}

// seen is how many versions came so far.
func (l *lineLog) seen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// result stops the watch and returns the versions it saw.
func (l *lineLog) result() []string {
	l.stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}
