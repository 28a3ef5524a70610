package optin

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/mydeployment-io/mydeployment-operator/api/v1beta1"
)

func md(strategy appsv1.DeploymentStrategyType, annotations map[string]string) *appsv1beta1.MyDeployment {
	return &appsv1beta1.MyDeployment{
		ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec:       appsv1beta1.MyDeploymentSpec{RolloutSpec: appsv1beta1.RolloutSpec{Strategy: appsv1.DeploymentStrategy{Type: strategy}}},
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		partition   string // "" for none
		pods10      int32  // partition pods out of 10 replicas
		respectPDB  bool
		inPlace     bool
		drain       bool
		config      bool
		err         string // substring of the only error; "" for none
	}{
		{name: "no annotations"},
		{name: "count", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "8"}, partition: "8", pods10: 8},
		{name: "zero", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "0"}, partition: "0"},
		{name: "count beyond replicas holds them all", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "12"}, partition: "12", pods10: 10},
		{name: "percent rounds up", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "75%"}, partition: "75%", pods10: 8},
		{name: "100%", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "100%"}, partition: "100%", pods10: 10},
		{name: "explicit RollingUpdate", strategy: appsv1.RollingUpdateDeploymentStrategyType, annotations: map[string]string{appsv1beta1.PartitionAnnotation: "1"}, partition: "1", pods10: 1},
		{name: "negative", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "-1"}, err: `metadata.annotations[apps.mydeployment.io/partition]: Invalid value: "-1"`},
		{name: "over 100%", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "101%"}, err: "percentage from 0% to 100%"},
		{name: "not a number", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "half"}, err: "apps.mydeployment.io/partition"},
		{name: "empty", annotations: map[string]string{appsv1beta1.PartitionAnnotation: ""}, err: "apps.mydeployment.io/partition"},
		{name: "leading plus", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "+3"}, err: "apps.mydeployment.io/partition"},
		{name: "beyond int32", annotations: map[string]string{appsv1beta1.PartitionAnnotation: "2147483648"}, err: "apps.mydeployment.io/partition"},
		{name: "with Recreate", strategy: appsv1.RecreateDeploymentStrategyType, annotations: map[string]string{appsv1beta1.PartitionAnnotation: "2"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "respect-pdb", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "true"}, respectPDB: true},
		{name: "respect-pdb false", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "false"}},
		{name: "update-mode InPlaceIfPossible", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceIfPossible"}, inPlace: true},
		{name: "update-mode Recreate", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "Recreate"}},
		{name: "update-mode unknown", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceOnly"},
			err: `metadata.annotations[apps.mydeployment.io/update-mode]: Unsupported value: "InPlaceOnly": supported values: "Recreate", "InPlaceIfPossible"`},
		{name: "update-mode lower case", annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "inplaceifpossible"}, err: "apps.mydeployment.io/update-mode"},
		{name: "update-mode InPlaceIfPossible with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "InPlaceIfPossible"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "update-mode Recreate with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.UpdateModeAnnotation: "Recreate"}},
		{name: "drain SurgeFirst", annotations: map[string]string{appsv1beta1.DrainAnnotation: "SurgeFirst"}, drain: true},
		{name: "drain unknown", annotations: map[string]string{appsv1beta1.DrainAnnotation: "Evict"},
			err: `metadata.annotations[apps.mydeployment.io/drain]: Unsupported value: "Evict": supported values: "SurgeFirst"`},
		{name: "drain with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.DrainAnnotation: "SurgeFirst"}, err: "SurgeFirst needs spec.strategy.type RollingUpdate"},
		{name: "rollout-on-config-change", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}, config: true},
		{name: "rollout-on-config-change false", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "false"}},
		{name: "rollout-on-config-change with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "true"}, config: true},
		{name: "rollout-on-config-change unknown", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "yes"},
			err: `metadata.annotations[apps.mydeployment.io/rollout-on-config-change]: Unsupported value: "yes": supported values: "true", "false"`},
		{name: "rollout-on-config-change upper case", annotations: map[string]string{appsv1beta1.RolloutOnConfigChangeAnnotation: "True"},
			err: "apps.mydeployment.io/rollout-on-config-change"},
		{name: "respect-pdb unknown", annotations: map[string]string{appsv1beta1.RespectPDBAnnotation: "yes"}, err: `metadata.annotations[apps.mydeployment.io/respect-pdb]: Unsupported value: "yes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errs := Parse(md(tc.strategy, tc.annotations))
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			got := ""
			if o.Partition != nil {
				got = o.Partition.String()
			}
			if got != tc.partition {
				t.Errorf("partition %q, want %q", got, tc.partition)
			}
			if n := o.Partition.Pods(10); n != tc.pods10 {
				t.Errorf("partition pods of 10: %d, want %d", n, tc.pods10)
			}
			if o.RespectPDB != tc.respectPDB {
				t.Errorf("respectPDB %v, want %v", o.RespectPDB, tc.respectPDB)
			}
			if o.RolloutOnConfigChange != tc.config {
				t.Errorf("rolloutOnConfigChange %v, want %v", o.RolloutOnConfigChange, tc.config)
			}
			if o.InPlace != tc.inPlace {
				t.Errorf("inPlace %v, want %v", o.InPlace, tc.inPlace)
			}
			if o.Drain != tc.drain {
				t.Errorf("drain %v, want %v", o.Drain, tc.drain)
			}
		})
	}
}

func TestPartitionPods(t *testing.T) {
	for _, tc := range []struct {
		p        Partition
		replicas int32
		want     int32
	}{
		{Partition{Value: 1, Percent: true}, 1, 1},
		{Partition{Value: 50, Percent: true}, 3, 2},
		{Partition{Value: 100, Percent: true}, 2147483647, 2147483647},
		{Partition{Value: 5}, 0, 0},
		{Partition{Value: 5}, -3, 0},
	} {
		if got := tc.p.Pods(tc.replicas); got != tc.want {
			t.Errorf("%s of %d: %d, want %d", tc.p, tc.replicas, got, tc.want)
		}
	}
}

func TestParseOnFailure(t *testing.T) {
	for _, tc := range []struct {
		name        string
		strategy    appsv1.DeploymentStrategyType
		annotations map[string]string
		abort       bool
		err         string // substring of the only error; "" for none
	}{
		{name: "on-failure Abort", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, abort: true},
		{name: "on-failure Continue", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "on-failure unknown", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Rollback"},
			err: `metadata.annotations[apps.mydeployment.io/on-failure]: Unsupported value: "Rollback": supported values: "Continue", "Abort"`},
		{name: "on-failure lower case", annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "abort"}, err: "apps.mydeployment.io/on-failure"},
		{name: "on-failure Abort with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Abort"}, err: "needs spec.strategy.type RollingUpdate"},
		{name: "on-failure Continue with Recreate", strategy: appsv1.RecreateDeploymentStrategyType,
			annotations: map[string]string{appsv1beta1.OnFailureAnnotation: "Continue"}},
		{name: "retried-at", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "2026-11-27T22:00:00Z"}},
		{name: "retried-at not a time", annotations: map[string]string{appsv1beta1.RetriedAtAnnotation: "yesterday"},
			err: `metadata.annotations[apps.mydeployment.io/retried-at]: Invalid value: "yesterday"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, errs := Parse(md(tc.strategy, tc.annotations))
			switch {
			case tc.err == "" && len(errs) > 0:
				t.Fatalf("unexpected errors: %v", errs)
			case tc.err != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.err)):
				t.Fatalf("errors %v, want one containing %q", errs, tc.err)
			}
			if o.Abort != tc.abort {
				t.Errorf("abort %v, want %v", o.Abort, tc.abort)
			}
		})
	}
}
