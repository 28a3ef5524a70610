package hooks

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// The environment every container of a hook's Job gets.
const (
	EnvName     = "MYDEPLOYMENT_NAME"
	EnvRevision = "MYDEPLOYMENT_REVISION"
	EnvHook     = "MYDEPLOYMENT_HOOK"
)

// maxJobName: a Job's name is the job-name label value of its pods.
const maxJobName = 63

// objectRef is the MyDeployment a spec was parsed from.
type objectRef struct {
	Name, Namespace string
	UID             types.UID
}

// JobName is the name of the Job of object's hook at point of revision
// (a ControllerRevision's name, "<object>-<hash>"): "<object>-<hash>-<point>",
// with "-r<hash of retried>" after a `rollout retry` (retried not zero), the
// object's name cut so the whole is at most 63 characters. The same point
// of the same revision and retry always has the same name: a restart, a
// lost reply or a second replica finds the Job instead of making another.
func JobName(object, revision, point string, retried time.Time) string {
	suffix := "-" + revisionHash(revision) + "-" + point
	if !retried.IsZero() {
		suffix += "-r" + hashOf(retried.UTC().Format(time.RFC3339))
	}
	if limit := maxJobName - len(suffix); len(object) > limit {
		object = object[:max(limit, 0)]
	}
	// A '.' before '-' would start a DNS label with '-'.
	return strings.TrimRight(object, ".") + suffix
}

// revisionHash is the hash a revision's name ends with (revision.Name:
// the hash has no '-').
func revisionHash(revision string) string {
	return revision[strings.LastIndex(revision, "-")+1:]
}

// hashOf is a short hash of s, in the alphabet of revision hashes.
func hashOf(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s)) // hash.Hash never returns an error
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// jobControllerLabels are the labels the Job controller puts on a Job and
// its pod template (with its selector): the template's, which a Job made
// from it must not carry.
var jobControllerLabels = []string{
	"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel,
}

// NewJob is the Job of o's hook at point of revision, named name, made
// from the template Job tmpl: its spec, with the Job controller's selector
// and labels dropped (the API server makes new ones), not suspended,
// without a time to live once finished (the Job's status is the hook's
// record: a Job deleted after it succeeded would run again), labelled
// with the point and the revision's hash, controlled by the object, and
// every container told the object, the revision and the point in its
// env. A template that is not suspended is refused: it runs by itself.
func NewJob(tmpl *batchv1.Job, o objectRef, revision, point, name string) (*batchv1.Job, error) {
	if !ptr.Deref(tmpl.Spec.Suspend, false) {
		return nil, fmt.Errorf("the %s hook's template Job %q is not suspended (spec.suspend: true): it would run by itself",
			point, tmpl.Name)
	}
	spec := *tmpl.Spec.DeepCopy()
	spec.Selector, spec.ManualSelector, spec.Suspend, spec.TTLSecondsAfterFinished = nil, nil, ptr.To(false), nil
	spec.Template.Labels = withoutJobLabels(spec.Template.Labels)
	env := []corev1.EnvVar{{Name: EnvName, Value: o.Name}, {Name: EnvRevision, Value: revision}, {Name: EnvHook, Value: point}}
	for _, cs := range [][]corev1.Container{spec.Template.Spec.InitContainers, spec.Template.Spec.Containers} {
		for i := range cs {
			cs[i].Env = withEnv(cs[i].Env, env)
		}
	}
	labels := withoutJobLabels(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[HookLabel], labels[RevisionHashLabel] = point, revisionHash(revision)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: o.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appsv1beta1.GroupVersion.String(), Kind: "MyDeployment", Name: o.Name, UID: o.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: spec,
	}, nil
}

// withoutJobLabels is a copy of labels without the Job controller's.
func withoutJobLabels(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	for _, k := range jobControllerLabels {
		delete(out, k)
	}
	return out
}

// withEnv is env with add set: a variable of the same name replaced.
func withEnv(env, add []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(env)+len(add))
	for _, e := range env {
		taken := false
		for _, a := range add {
			taken = taken || a.Name == e.Name
		}
		if !taken {
			out = append(out, e)
		}
	}
	return append(out, add...)
}

// phase is what a hook's Job says of the hook.
type phase int

const (
	missing   phase = iota // no Job of the name in the cache
	running                // neither Complete nor Failed
	succeeded              // Complete=True
	failed                 // Failed=True
	taken                  // a Job of the name the object does not control
)

// jobState is what the cache shows of one hook's Job.
type jobState struct {
	phase phase
	// why is a failed Job's Failed condition: its reason and message.
	why string
	// revision is the hash of the revision the Job is of (RevisionHashLabel).
	revision string
}

// stateOf is what job says of its hook, for the object uid.
func stateOf(job *batchv1.Job, uid types.UID) jobState {
	if ref := metav1.GetControllerOfNoCopy(job); ref == nil || ref.UID != uid {
		return jobState{phase: taken}
	}
	st := jobState{phase: running, revision: job.Labels[RevisionHashLabel]}
	for _, c := range job.Status.Conditions {
		switch {
		case c.Status != corev1.ConditionTrue:
		case c.Type == batchv1.JobComplete:
			st.phase = succeeded
		case c.Type == batchv1.JobFailed:
			st.phase, st.why = failed, strings.TrimSuffix(c.Reason+": "+c.Message, ": ")
		}
	}
	return st
}
