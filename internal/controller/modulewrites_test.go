package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin"
	"github.com/mydeployment-io/mydeployment-operator/internal/optin/hooks"
)

// TestActWritesModuleObjectsOnce: act makes a module's object from its
// template read around the cache, and a create that finds the name taken
// (a lost reply, a cache that does not show the Job yet) is read back: the
// object's own Job is done, another's is the write's failure; a template
// missing is one too: reported, and looked at again later, not retried in
// a loop as a sync error. Never a second Job.
func TestActWritesModuleObjectsOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	md := &appsv1beta1.MyDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1",
		Annotations: map[string]string{hooks.Annotation: `{"pre":{"job":"db-migrate"}}`}}}
	tmpl := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-migrate"}, Spec: batchv1.JobSpec{Suspend: ptr.To(true)}}
	writes := preJobWrites(t, scheme, md)
	name := hooks.JobName("web", "web-2", hooks.Pre, time.Time{})

	for _, tc := range []struct {
		name      string
		existing  []client.Object
		lostReply bool // the create lands but its reply is lost: the next sync's create finds it
		err       string
	}{
		{name: "made", existing: []client.Object{tmpl}},
		{name: "made by an earlier sync", existing: []client.Object{tmpl, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			OwnerReferences: []metav1.OwnerReference{{UID: "uid-1", Controller: ptr.To(true), Name: "web", Kind: "MyDeployment", APIVersion: "apps.mydeployment.io/v1beta1"}}}}}},
		{name: "a lost reply", existing: []client.Object{tmpl}, lostReply: true},
		{name: "name taken", existing: []client.Object{tmpl, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}},
			err: name + ": name taken by an object the MyDeployment does not control"},
		{name: "no template", err: `reading db-migrate: jobs.batch "db-migrate" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			creates := 0
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.existing...).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					creates++
					err := c.Create(ctx, obj, opts...)
					if tc.lostReply && creates == 1 {
						return errors.New("the reply was lost")
					}
					return err
				}}).Build()
			a := actor{writer: cl, apiReader: cl}
			p := &syncPlan{md: md, writes: writes}
			out := &outcome{}
			err := a.writeModules(context.Background(), p, out)
			if tc.lostReply {
				err = a.writeModules(context.Background(), p, &outcome{})
			}
			switch {
			case err != nil:
				t.Fatalf("want no sync error (no retry loop), got %v", err)
			case tc.err != "" && (out.failure == nil || out.failure.Reason != hooks.ReasonHookFailed ||
				!strings.Contains(out.failure.Message, tc.err)):
				t.Errorf("want the failure %q in the status as HookFailed, got %+v", tc.err, out.failure)
			case tc.err != "" && out.retryAfter != moduleWriteRetry:
				t.Errorf("want the object looked at again after %v, got %v", moduleWriteRetry, out.retryAfter)
			}
			var jobs batchv1.JobList
			if err := cl.List(context.Background(), &jobs, client.InNamespace("ns")); err != nil {
				t.Fatal(err)
			}
			made := 0
			for _, j := range jobs.Items {
				if j.Name == name {
					made++
					if tc.err == "" && !metav1.IsControlledBy(&j, md) {
						t.Errorf("the Job is not the object's: %v", j.OwnerReferences)
					}
				}
			}
			if want := 1; tc.err == "" && made != want || tc.name == "no template" && made != 0 {
				t.Errorf("want %d Job %s, got %d", want, name, made)
			}
		})
	}
}

// preJobWrites are the writes a sync plans for md's pre hook of the
// rollout from web-1 to web-2, read from an empty cache.
func preJobWrites(t *testing.T, scheme *runtime.Scheme, md *appsv1beta1.MyDeployment) []optin.Write {
	t.Helper()
	spec, fieldErrs := hooks.Module.Parse(md)
	if len(fieldErrs) > 0 {
		t.Fatal(fieldErrs)
	}
	// The spec as a sync reads it from an empty cache: the pre Job of the
	// rollout from web-1 to web-2 is to be made.
	part, err := hooks.Module.Build(context.Background(), optin.BuildEnv{Reader: fake.NewClientBuilder().WithScheme(scheme).Build()})
	if err != nil {
		t.Fatal(err)
	}
	read, err := spec.(optin.Reader).Read(context.Background(), md, optin.ReadEnv{Set: optin.NewSet(spec),
		Parts: map[string]optin.Part{hooks.Name: part}})
	if err != nil {
		t.Fatal(err)
	}
	writes := optin.WritesOf(optin.NewSet(read), optin.Planned{Update: "web-2", Current: "web-1"})
	if len(writes) != 1 {
		t.Fatalf("want the pre Job to make, got %d writes", len(writes))
	}
	return writes
}
