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

package install

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/test/utils"
)

// leaseName is the manager's leader election lease (its LeaderElectionID).
const leaseName = "d2cb53c1.mydeployment.io"

// failoverMD is the MyDeployment created while the leader is dead, named %s.
const failoverMD = `{"apiVersion":"apps.mydeployment.io/v1beta1","kind":"MyDeployment","metadata":{"name":"%s"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"%[1]s"}},"template":{"metadata":{"labels":{"app":"%[1]s"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`

// holder is the lease's holder identity and its transitions.
func holder() (string, int32) {
	l, err := clientset.CoordinationV1().Leases(operatorNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	var transitions int32
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}
	return *l.Spec.HolderIdentity, transitions
}

// createMD creates the MyDeployment name in the samples namespace: nil once
// the API server (and so the webhook) admitted it. A client call, not a
// kubectl process: the write is timed, and a process start on a loaded
// machine takes longer than the call.
func createMD(name string) error {
	var md unstructured.Unstructured
	if err := json.Unmarshal([]byte(fmt.Sprintf(failoverMD, name)), &md.Object); err != nil {
		return StopTrying(err.Error())
	}
	gvr := appsv1beta1.GroupVersion.WithResource("mydeployments")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := dyn.Resource(gvr).Namespace(samples).Create(ctx, &md, metav1.CreateOptions{})
	return err
}

// setContainer plays the kubelet's status update of the pod's one
// container: stopped (it died: not ready, terminated with exit code 137,
// the pod's Ready and ContainersReady False), or running again after a
// restart (restartCount+1, ready only once its readiness probe passes).
// kwok keeps a pod Ready whatever the host process does, so without this
// the webhook Service would keep the dead replica's endpoint, and the API
// server would go on sending it half the admission calls; a kubelet notices
// a dead container within a second (its PLEG) and reports it at once.
func setContainer(p *hostPod, running, ready bool) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := clientset.CoreV1().Pods(operatorNamespace).Get(context.Background(), p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		cs := &pod.Status.ContainerStatuses[0]
		now := metav1.Now()
		switch {
		case !running:
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "Error", StartedAt: started, FinishedAt: now}}
		case cs.State.Running == nil:
			cs.LastTerminationState, cs.RestartCount = cs.State, cs.RestartCount+1
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
		cs.Started, cs.Ready = &running, ready
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		for i, c := range pod.Status.Conditions {
			if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != status {
				pod.Status.Conditions[i].Status, pod.Status.Conditions[i].LastTransitionTime = status, now
			}
		}
		_, err = clientset.CoreV1().Pods(operatorNamespace).UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
		return err
	})).To(Succeed())
}

// endpointReady is whether the webhook Service's EndpointSlices list ip as a
// ready endpoint ("absent" if they do not list it).
func endpointReady(ip string) func() string {
	return func() string {
		slices, err := clientset.DiscoveryV1().EndpointSlices(operatorNamespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + webhookService})
		Expect(err).NotTo(HaveOccurred())
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if len(e.Addresses) > 0 && e.Addresses[0] == ip {
					return fmt.Sprint(e.Conditions.Ready != nil && *e.Conditions.Ready)
				}
			}
		}
		return "absent"
	}
}

// leaderKill kills the leading replica's process and shows what a user
// sees: a MyDeployment write admitted within 2 s of the kill (the other
// replica's webhook serves; the leaderless time is the lease's 15 s), every
// write admitted while the dead leader still holds the lease, then the other
// replica taking the lease and reconciling what was written meanwhile, its
// certificate untouched; and the killed pod's container restarted by its
// kubelet serving again as a replica that does not lead.
func leaderKill() {
	lead, other := leader()
	Expect(endpointReady(lead.ip)()).To(Equal("true"))
	Expect(endpointReady(other.ip)()).To(Equal("true"))
	identity, transitions := holder()
	secretVersion := secretData()["tls.crt"]

	By("killing the leader's process (SIGKILL: the lease is not released), on pod " + lead.name)
	killed := time.Now()
	lead.manager.Kill()
	By("its kubelet reports the container dead: the pod is not Ready, the Service drops its endpoint")
	setContainer(lead, false, false)

	By("a MyDeployment write succeeds within 2 s of the kill")
	Eventually(func() error { return createMD("failover") }, 2*time.Second-time.Since(killed), 100*time.Millisecond).
		Should(Succeed(), "admitted by the replica that does not lead")
	admitted := time.Since(killed)
	Eventually(endpointReady(lead.ip), 10*time.Second, 100*time.Millisecond).Should(Equal("false"))

	By("while the dead leader still holds the lease, every write is admitted")
	writes := 0
	for h, _ := holder(); h == identity; h, _ = holder() {
		out, err := utils.Kubectl("-n", samples, "annotate", "md", "failover", "--overwrite",
			fmt.Sprintf("e2e/write=%d", writes))
		Expect(err).NotTo(HaveOccurred(), "write %d, %s after the kill: %s", writes, time.Since(killed), out)
		writes++
		time.Sleep(500 * time.Millisecond)
	}
	_, _ = fmt.Fprintf(GinkgoWriter, "first write admitted %s after the kill; %d more while no replica led\n", admitted, writes)
	Expect(writes).To(BeNumerically(">=", 3), "the lease outlives the leader for seconds (15 s lease duration)")

	By("the other replica takes the lease and reconciles what was written while no one led")
	Eventually(other.leads, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
	h, t := holder()
	Expect(h).NotTo(Equal(identity))
	Expect(t).To(Equal(transitions + 1))
	Eventually(utils.JSONPath("{.status.availableReplicas}", "-n", samples, "md", "failover"), 2*time.Minute, time.Second).
		Should(Equal("2"))
	Expect(secretData()["tls.crt"]).To(Equal(secretVersion), "the new leader keeps the certificate: it was valid")

	By("the kubelet restarts the container: the manager starts again, Ready once it serves, and does not lead")
	lead.run()
	setContainer(lead, true, false)
	Eventually(func() int { code, _ := lead.readyz(); return code }, 2*time.Minute, time.Second).Should(Equal(200))
	setContainer(lead, true, true)
	Eventually(endpointReady(lead.ip), 10*time.Second, 100*time.Millisecond).Should(Equal("true"))
	Expect(servedCertificate(lead.ip)).To(Equal(secretVersion))
	Consistently(lead.leads, 3*time.Second, 500*time.Millisecond).Should(BeFalse())
	utils.MustKubectl("-n", samples, "delete", "md", "failover")
}
