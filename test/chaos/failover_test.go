package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	leaseName     = "d2cb53c1.mydeployment.io" // cmd/main.go's LeaderElectionID
	leaseDuration = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
	acquiredLog   = "Successfully acquired lease"
)

// TestLeaderFailover: two managers with leader election; the leader is
// SIGKILLed mid-rollout (its lease is not released) and the other must take
// over within the lease duration, with no invariant broken.
func TestLeaderFailover(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "chaos-failover")
	// The lease lives where config/ grants the manager leases: its own namespace.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: managerNamespace}}
	_ = suite.c.Delete(ctx, lease) // left by an earlier run on this cluster
	args := []string{"--leader-elect", "--leader-election-namespace=" + managerNamespace,
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=" + retryPeriod.String()}
	managers := []*manager{newManager("leader-a", nil, args...), newManager("leader-b", nil, args...)}
	for _, m := range managers {
		if err := m.start(); err != nil {
			t.Fatal(err)
		}
		defer m.stop()
	}
	holder := func() string {
		var l coordinationv1.Lease
		if err := suite.c.Get(ctx, client.ObjectKeyFromObject(lease), &l); err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	leader := func() (*manager, *manager) {
		for i, m := range managers {
			if m.running() && m.currentLogHas(acquiredLog) {
				return m, managers[1-i]
			}
		}
		return nil, nil
	}

	var mds []*tracked
	for i := range 3 {
		d := &tracked{name: fmt.Sprintf("md-%02d", i), ns: ns, strategy: strategies[i%2]}
		if err := suite.create(ctx, d, spec{replicas: 6, image: 1}); err != nil {
			t.Fatal(err)
		}
		mds = append(mds, d)
	}

	failovers := scale(1, 5)
	var takeovers []time.Duration
	var rollouts int64
	start := time.Now()
	eventually(t, 3*leaseDuration, "a manager leads", func() error {
		if m, _ := leader(); m == nil {
			return fmt.Errorf("no manager holds the lease; logs:\n%s\n%s", managers[0].tail(20), managers[1].tail(20))
		}
		return nil
	})
	for f := range failovers {
		old, standby := leader()
		oldHolder := holder()
		// Start a rollout on every MyDeployment and kill the leader once one
		// of them runs pods of two revisions.
		mixedBefore := make([]int, len(mds))
		for i, d := range mds {
			mixedBefore[i] = suite.w.mixedCount(d.uid)
		}
		errs := make(chan error, len(mds))
		for _, d := range mds {
			go func() { errs <- suite.change(ctx, d, spec{replicas: d.cur.replicas, image: d.cur.image + 1}) }()
		}
		deadline := time.Now().Add(30 * time.Second)
		for midway := false; !midway; {
			for i, d := range mds {
				midway = midway || suite.w.mixedCount(d.uid) > mixedBefore[i]
			}
			if time.Now().After(deadline) {
				t.Fatal("no rollout reached its middle")
			}
			time.Sleep(20 * time.Millisecond)
		}
		killed := time.Now()
		old.kill()
		var took time.Duration
		for {
			if h := holder(); h != "" && h != oldHolder {
				took = time.Since(killed)
				break
			}
			if time.Since(killed) > 3*leaseDuration {
				t.Fatalf("failover %d: nobody took the lease over in %v", f+1, 3*leaseDuration)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// The standby logs its win just after its lease update lands.
		eventually(t, 2*time.Second, fmt.Sprintf("failover %d: the standby leads", f+1), func() error {
			if !standby.currentLogHas(acquiredLog) {
				return fmt.Errorf("the lease moved but the standby's log does not say it leads")
			}
			return nil
		})
		takeovers = append(takeovers, took)
		// client-go's elector counts the lease duration from when it last saw
		// the record change, and polls every retry period stretched by a
		// jitter of up to 120%: so the standby may see the leader's last
		// renewal up to 2.2 retry periods late, and notice the expiry up to
		// 2.2 retry periods late again.
		if limit := leaseDuration + 2*retryPeriod*22/10 + 200*time.Millisecond; took > limit {
			t.Errorf("failover %d: takeover took %v, more than the lease duration allows (%v)", f+1, took, limit)
		}
		if err := old.start(); err != nil { // back as the standby
			t.Fatal(err)
		}
		for range mds {
			if err := <-errs; err != nil {
				t.Fatalf("failover %d: %v", f+1, err)
			}
			rollouts++
		}
		requireNoViolations(t)
	}
	var list []string
	for _, d := range takeovers {
		list = append(list, round(d))
	}
	figures.add(phaseFigures{name: "leader failover (2 managers)", mds: len(mds), res: workloadResult{rollouts: rollouts},
		kills: failovers, failovers: failovers, takeovers: takeovers, duration: time.Since(start)})
	figures.note("failover: lease %v, retry %v; takeover after SIGKILL of the leader mid-rollout: %s",
		leaseDuration, retryPeriod, strings.Join(list, ", "))
}
