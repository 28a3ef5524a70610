package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

// A sync that reads the object from a cache that has not shown our writes
// yet plans from the object our last write returned: its annotations (what
// the pods are sized for) and its status.
func TestWriteMemory(t *testing.T) {
	at := func(rv, sizedFor string, replicas int32) *appsv1beta1.MyDeployment {
		return &appsv1beta1.MyDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "md", Namespace: "ns", ResourceVersion: rv,
				Annotations: map[string]string{"sized-for": sizedFor}},
			Status: appsv1beta1.MyDeploymentStatus{Replicas: replicas},
		}
	}
	m := newWriteMemory()
	m.wrote("ns/md", "1", at("2", "3", 2)) // the annotations, from version 1
	m.wrote("ns/md", "2", at("3", "3", 3)) // then the status, from version 2

	for _, cached := range []string{"1", "2"} {
		md := at(cached, "2", 2)
		m.catchUp("ns/md", md)
		if md.ResourceVersion != "3" || md.Annotations["sized-for"] != "3" || md.Status.Replicas != 3 {
			t.Errorf("cache at version %s: got version %s, sized-for %s, replicas %d; want our last write (3, 3, 3)",
				cached, md.ResourceVersion, md.Annotations["sized-for"], md.Status.Replicas)
		}
	}

	md := at("4", "5", 5) // someone else's write after ours: the cache is newer
	m.catchUp("ns/md", md)
	if md.ResourceVersion != "4" || md.Annotations["sized-for"] != "5" {
		t.Errorf("a cache past our writes was overwritten: %+v", md.ObjectMeta)
	}
	md = at("1", "2", 2)
	m.catchUp("ns/md", md)
	if md.ResourceVersion != "1" {
		t.Error("the memory outlived a cache that moved past it")
	}

	m.wrote("ns/md", "7", at("8", "9", 9)) // not chained to the last write
	md = at("2", "2", 2)
	m.catchUp("ns/md", md)
	if md.ResourceVersion != "2" {
		t.Error("a write from version 7 caught up a cache at version 2")
	}
	var none *writeMemory
	none.wrote("ns/md", "1", at("2", "3", 3))
	none.catchUp("ns/md", md)
}
