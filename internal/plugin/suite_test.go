/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package plugin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The suite runs the plugin against a real kube-apiserver and etcd (envtest)
// through a kubeconfig file, as a user would. No controller runs: tests
// create MyDeployments and ControllerRevisions and write status themselves.

var (
	ctx        context.Context
	cancel     context.CancelFunc
	testEnv    *envtest.Environment
	k8sClient  client.Client
	kubeconfig string
)

func TestPlugin(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Plugin Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	By("bootstrapping test environment")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		testEnv.BinaryAssetsDirectory = filepath.Join("..", "..", "bin", "k8s")
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	user, err := testEnv.AddUser(envtest.User{Name: "plugin-user", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	dir, err := os.MkdirTemp("", "plugin-kubeconfig")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})

// syncBuffer is a bytes.Buffer safe to read while a command writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// result is what one plugin invocation printed and returned.
type result struct {
	out, err string
	code     int
}

// testNow is the clock the plugin sees in tests.
var testNow = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// runPlugin runs the plugin with --kubeconfig and -n ns prepended to args.
func runPlugin(ns string, args ...string) result {
	var out, errOut syncBuffer
	code := start(ns, &out, &errOut, args...)()
	return result{out: out.String(), err: errOut.String(), code: code}
}

// start runs the plugin in the background; the returned func waits for its
// exit code.
func start(ns string, out, errOut *syncBuffer, args ...string) func() int {
	full := append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)
	done := make(chan int, 1)
	go func() {
		defer GinkgoRecover()
		done <- Run(full, Options{
			IOStreams:    IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: errOut},
			Now:          func() time.Time { return testNow() },
			PollInterval: 20 * time.Millisecond,
		})
	}()
	return func() int {
		var code int
		Eventually(done, 30*time.Second).Should(Receive(&code))
		return code
	}
}
