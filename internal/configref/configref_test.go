package configref

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestRefs(t *testing.T) {
	cm := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want []Ref
	}{
		{name: "nothing referenced", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}},
		{name: "configMap and secret volumes", spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cm("app")}}},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db", Optional: ptr.To(true)}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}}, want: []Ref{{Kind: ConfigMap, Name: "app"}, {Kind: Secret, Name: "db", Optional: true}}},
		{name: "projected sources", spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cm("p-cm")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: cm("p-s")}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
			}}}},
		}}, want: []Ref{{Kind: ConfigMap, Name: "p-cm"}, {Kind: Secret, Name: "p-s"}}},
		{name: "envFrom and valueFrom in containers and init containers", spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cm("init-s")}}}}},
			Containers: []corev1.Container{{Name: "a",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cm("env")}}},
				Env: []corev1.EnvVar{
					{Name: "A", Value: "plain"},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cm("key-cm"), Key: "k"}}},
					{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cm("key-s"), Key: "k", Optional: ptr.To(true)}}},
					{Name: "D", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				}}}},
			want: []Ref{{Kind: ConfigMap, Name: "env"}, {Kind: ConfigMap, Name: "key-cm"},
				{Kind: Secret, Name: "init-s"}, {Kind: Secret, Name: "key-s", Optional: true}}},
		{name: "imagePullSecrets are not read by containers", spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{cm("registry")}, Containers: []corev1.Container{{Name: "a"}}}},
		{name: "one object referenced twice: optional only if both say so", spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: cm("app"), Optional: ptr.To(true)}}}},
			Containers: []corev1.Container{{Name: "a", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cm("app")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cm("both"), Optional: ptr.To(true)}}}},
				{Name: "b", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cm("both"), Optional: ptr.To(true)}}}}},
		}, want: []Ref{{Kind: ConfigMap, Name: "app"}, {Kind: Secret, Name: "both", Optional: true}}},
		{name: "a ConfigMap and a Secret of one name are two objects", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cm("x")}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cm("x")}}}}}},
			want: []Ref{{Kind: ConfigMap, Name: "x"}, {Kind: Secret, Name: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Refs(&corev1.PodTemplateSpec{Spec: tc.spec})
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Refs = %v, want %v", got, tc.want)
			}
		})
	}
	if got := Refs(nil); got != nil {
		t.Errorf("Refs(nil) = %v", got)
	}
}

func TestHashData(t *testing.T) {
	base := HashData(map[string]string{"a": "1", "b": "2"}, nil)
	if again := HashData(map[string]string{"b": "2", "a": "1"}, nil); again != base {
		t.Errorf("the same data hashed %s then %s", base, again)
	}
	for name, h := range map[string]string{
		"a value changed":           HashData(map[string]string{"a": "1", "b": "3"}, nil),
		"a key added":               HashData(map[string]string{"a": "1", "b": "2", "c": ""}, nil),
		"a key moved to binaryData": HashData(map[string]string{"a": "1"}, map[string][]byte{"b": []byte("2")}),
		"keys and values shifted":   HashData(map[string]string{"a": "1b", "": "2"}, nil),
		"empty":                     HashData(nil, nil),
	} {
		if h == base {
			t.Errorf("%s: same hash as the original data", name)
		}
	}
	if HashData(nil, nil) != HashData(map[string]string{}, map[string][]byte{}) {
		t.Error("nil and empty maps hash differently")
	}
	if len(base) != 16 {
		t.Errorf("hash %q is not 16 hex digits", base)
	}
}

func TestEncodeDecodeChanged(t *testing.T) {
	v1 := Encode([]Hashed{{Ref{Kind: ConfigMap, Name: "app"}, "aaaa"}, {Ref{Kind: Secret, Name: "db"}, "bbbb"}})
	if v1 != "configmap/app=aaaa,secret/db=bbbb" {
		t.Fatalf("Encode = %q", v1)
	}
	if got := Decode(v1); !reflect.DeepEqual(got, map[string]string{"configmap/app": "aaaa", "secret/db": "bbbb"}) {
		t.Errorf("Decode = %v", got)
	}
	v2 := "configmap/app=cccc,secret/db=bbbb,secret/new=dddd"
	for _, tc := range []struct {
		before, after string
		want          []string
	}{
		{v1, v1, nil},
		{v1, v2, []string{"configmap/app", "secret/new"}},
		{v2, v1, []string{"configmap/app", "secret/new"}},
		{"", v1, []string{"configmap/app", "secret/db"}},
		{v1, "", []string{"configmap/app", "secret/db"}},
	} {
		if got := Changed(tc.before, tc.after); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Changed(%q, %q) = %v, want %v", tc.before, tc.after, got, tc.want)
		}
	}
}

func TestWithHashAndWithout(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{}
	tmpl.Labels = map[string]string{"app": "web"}
	with := WithHash(tmpl, "configmap/app=aaaa")
	if tmpl.Annotations != nil {
		t.Fatalf("WithHash modified its input: %v", tmpl.Annotations)
	}
	if got := with.Annotations["apps.mydeployment.io/config-hash"]; got != "configmap/app=aaaa" {
		t.Fatalf("annotation %q", got)
	}
	back := Without(with)
	if !reflect.DeepEqual(back, tmpl) {
		t.Errorf("Without(WithHash(t)) = %+v, want %+v", back, tmpl)
	}
	if with.Annotations["apps.mydeployment.io/config-hash"] == "" {
		t.Error("Without modified its input")
	}
	if Without(tmpl) != tmpl {
		t.Error("Without copied a template with nothing to strip")
	}
}
