package upgrade

import (
	"context"
	"errors"
	"fmt"
	"os"

	apiv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// ConditionNameEnv names the operator's OperatorCondition; OLM sets it
	// on the operator's Deployment.
	ConditionNameEnv = "OPERATOR_CONDITION_NAME"
	// NamespaceEnv names the operator's namespace when it runs outside a
	// pod (no service account namespace file), as `make run` does.
	NamespaceEnv = "OPERATOR_NAMESPACE"
)

// Scheme knows the OperatorCondition type.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(apiv2.AddToScheme(Scheme))
}

// errNotUnderOLM: OPERATOR_CONDITION_NAME is unset: no OLM, or OLM v1.
var errNotUnderOLM = errors.New(ConditionNameEnv + " is not set (not installed by OLM v0; OLM v1 has no OperatorCondition)")

// NewCondition returns the Upgradeable condition of the operator's
// OperatorCondition through c, a client that knows [Scheme]: operator-lib's
// in-cluster condition (OPERATOR_CONDITION_NAME in the service account's
// namespace), else the same object in OPERATOR_NAMESPACE for an operator run
// outside a pod. The error says why there is none (not under OLM, or no
// namespace known).
func NewCondition(c client.Client) (conditions.Condition, error) {
	name := os.Getenv(ConditionNameEnv)
	if name == "" {
		return nil, errNotUnderOLM
	}
	upgradeable := apiv2.ConditionType(apiv2.Upgradeable)
	cond, err := conditions.InClusterFactory{Client: c}.NewCondition(upgradeable)
	if err == nil {
		return cond, nil
	}
	if ns := os.Getenv(NamespaceEnv); ns != "" {
		return NewObjectCondition(c, types.NamespacedName{Namespace: ns, Name: name}, upgradeable), nil
	}
	return nil, fmt.Errorf("%w; outside a pod, set %s", err, NamespaceEnv)
}

// NewObjectCondition is operator-lib's condition for the OperatorCondition
// key, for an operator that cannot read its namespace from its service
// account: the same Get and Set, on spec.conditions.
func NewObjectCondition(c client.Client, key types.NamespacedName, t apiv2.ConditionType) conditions.Condition {
	return &objectCondition{client: c, key: key, condType: t}
}

type objectCondition struct {
	client   client.Client
	key      types.NamespacedName
	condType apiv2.ConditionType
}

var _ conditions.Condition = &objectCondition{}

// Get implements conditions.Condition.
func (c *objectCondition) Get(ctx context.Context) (*metav1.Condition, error) {
	oc := &apiv2.OperatorCondition{}
	if err := c.client.Get(ctx, c.key, oc); err != nil {
		return nil, err
	}
	con := meta.FindStatusCondition(oc.Spec.Conditions, string(c.condType))
	if con == nil {
		return nil, fmt.Errorf("conditionType %v not found", c.condType)
	}
	return con, nil
}

// Set implements conditions.Condition.
func (c *objectCondition) Set(ctx context.Context, status metav1.ConditionStatus, opts ...conditions.Option) error {
	oc := &apiv2.OperatorCondition{}
	if err := c.client.Get(ctx, c.key, oc); err != nil {
		return err
	}
	cond := metav1.Condition{Type: string(c.condType), Status: status}
	for _, opt := range opts {
		opt(&cond)
	}
	meta.SetStatusCondition(&oc.Spec.Conditions, cond)
	return c.client.Update(ctx, oc)
}
