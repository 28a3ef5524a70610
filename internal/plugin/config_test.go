package plugin

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
	"github.com/mydeployment-io/mydeployment-operator/internal/configref"
	"github.com/mydeployment-io/mydeployment-operator/internal/revision"
)

// Revisions recorded with config hashes (rollout-on-config-change): history
// says what each changed, undo writes the template without them.
var _ = Describe("rollout history and undo with config hashes", func() {
	var (
		ns string
		md *appsv1beta1.MyDeployment
	)
	withConfig := func(image, config string, number int64) *appsv1.ControllerRevision {
		rev, err := revision.New(revision.Owner{
			Object:   md,
			GVK:      appsv1beta1.GroupVersion.WithKind("MyDeployment"),
			Selector: md.Spec.Selector,
			Template: configref.WithHash(podTemplate(md.Name, image), config),
		}, number, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Create(ctx, rev)).To(Succeed())
		return rev
	}
	BeforeEach(func() {
		ns = newNamespace()
		md = createMD(ns, "web", "nginx:2", 2)
		withConfig("nginx:1", "configmap/app=aaaa,secret/db=1111", 1)
		withConfig("nginx:1", "configmap/app=bbbb,secret/db=1111", 2)
		withConfig("nginx:1", "configmap/app=bbbb,secret/db=2222", 3)
		current := withConfig("nginx:2", "configmap/app=cccc,secret/db=2222", 4)
		setAnnotation(md, appsv1beta1.RevisionAnnotation, "4")
		setStatus(md, func(cur *appsv1beta1.MyDeployment) {
			cur.Status.ObservedGeneration = cur.Generation
			cur.Status.UpdateRevision = current.Name
			cur.Status.CurrentRevision = current.Name
		})
	})

	It("names what changed in each revision", func() {
		r := runPlugin(ns, "rollout", "history", "web")
		Expect(r.code).To(Equal(0), r.err)
		Expect(r.out).To(Equal("mydeployment.apps.mydeployment.io/web \n" +
			"REVISION  CHANGE                  CHANGE-CAUSE\n" +
			"1         initial                 <none>\n" +
			"2         configmap/app           <none>\n" +
			"3         secret/db               <none>\n" +
			"4         template,configmap/app  <none>\n"))
	})

	It("rolls back to the template, without the config hashes", func() {
		r := runPlugin(ns, "rollout", "undo", "web", "--to-revision", "2")
		Expect(r.code).To(Equal(0), r.err)
		got := getMD(md)
		Expect(apiequality.Semantic.DeepEqual(&got.Spec.Template, podTemplate("web", "nginx:1"))).To(BeTrue(),
			"template is %+v", got.Spec.Template)
	})
})
