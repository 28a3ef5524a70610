// Package faultclient wraps a controller-runtime client so that a share of
// its writes fail (an InternalError or a Conflict, without reaching the API
// server) and a share of its reads are delayed. It exists for the chaos
// suite (test/chaos): the manager installs it only when the environment
// variable [EnvVar] is set, which no production manifest does.
package faultclient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// EnvVar switches fault injection on, e.g.
// "writes=0.1,reads=0.2,delay=200ms,lost=0.05": fail 10% of writes (half of
// them as conflicts), delay 20% of reads by up to 200ms, and answer 5% of
// the creates and deletes that did succeed with a timeout, as when a reply
// is lost. Unset or empty: off.
const EnvVar = "MYDEPLOYMENT_FAULT_INJECTION"

// LogMessage is logged once per injected fault, so a test can count them.
const LogMessage = "fault injected"

// Config says how often to fail and delay.
type Config struct {
	// WriteFailure is the probability in [0,1] that a write fails.
	WriteFailure float64
	// ReadDelay is the probability in [0,1] that a read is delayed.
	ReadDelay float64
	// MaxDelay bounds a read delay (uniform in (0, MaxDelay]).
	MaxDelay time.Duration
	// LostReply is the probability that a create or delete the API server
	// carried out is reported to the caller as a timeout.
	LostReply float64
}

// Parse reads a Config from the EnvVar syntax; empty gives (nil, nil).
func Parse(spec string) (*Config, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	c := &Config{MaxDelay: 100 * time.Millisecond}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not key=value", EnvVar, kv)
		}
		var err error
		switch k {
		case "writes":
			c.WriteFailure, err = probability(v)
		case "reads":
			c.ReadDelay, err = probability(v)
		case "delay":
			c.MaxDelay, err = time.ParseDuration(v)
		case "lost":
			c.LostReply, err = probability(v)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvVar, err)
		}
	}
	return c, nil
}

func probability(v string) (float64, error) {
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("%q is not a probability in [0,1]", v)
	}
	return p, nil
}

// FromEnv returns the Config in EnvVar, nil when unset.
func FromEnv() (*Config, error) { return Parse(os.Getenv(EnvVar)) }

// NewClientFunc wraps the clients newInner makes with faults from c.
func NewClientFunc(c Config, newInner client.NewClientFunc) client.NewClientFunc {
	return func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		inner, err := newInner(cfg, opts)
		if err != nil {
			return nil, err
		}
		return Wrap(inner, c), nil
	}
}

// Wrap returns inner with faults from c.
func Wrap(inner client.Client, c Config) client.Client {
	return &faulty{Client: inner, cfg: c}
}

type faulty struct {
	client.Client
	cfg Config
}

var _ client.Client = &faulty{}

// fail decides whether this write fails and with what error.
func (f *faulty) fail(ctx context.Context, verb string, obj runtime.Object) error {
	if f.cfg.WriteFailure <= 0 || rand.Float64() >= f.cfg.WriteFailure {
		return nil
	}
	var gvk schema.GroupVersionKind
	name := ""
	if o, ok := obj.(client.Object); ok && o != nil {
		gvk, _ = f.GroupVersionKindFor(o)
		name = o.GetName()
	}
	gr := schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}
	var err error
	if rand.IntN(2) == 0 {
		err = apierrors.NewConflict(gr, name, fmt.Errorf("injected conflict"))
	} else {
		err = apierrors.NewInternalError(fmt.Errorf("injected failure"))
	}
	logf.FromContext(ctx).Info(LogMessage, "verb", verb, "kind", gvk.Kind, "name", name, "error", err.Error())
	return err
}

// lose decides whether the reply to a successful write is lost; if so it
// returns the timeout the caller sees instead.
func (f *faulty) lose(ctx context.Context, verb string, obj client.Object) error {
	if f.cfg.LostReply <= 0 || rand.Float64() >= f.cfg.LostReply {
		return nil
	}
	gvk, _ := f.GroupVersionKindFor(obj)
	err := apierrors.NewServerTimeout(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, verb, 1)
	logf.FromContext(ctx).Info(LogMessage, "verb", verb, "kind", gvk.Kind, "name", obj.GetName(), "error", "reply lost: "+err.Error())
	return err
}

func (f *faulty) delay(ctx context.Context) {
	if f.cfg.ReadDelay <= 0 || f.cfg.MaxDelay <= 0 || rand.Float64() >= f.cfg.ReadDelay {
		return
	}
	d := time.Duration(rand.Int64N(int64(f.cfg.MaxDelay))) + 1
	logf.FromContext(ctx).Info(LogMessage, "verb", "read", "delay", d.String())
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (f *faulty) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	f.delay(ctx)
	return f.Client.Get(ctx, key, obj, opts...)
}

func (f *faulty) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	f.delay(ctx)
	return f.Client.List(ctx, list, opts...)
}

func (f *faulty) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := f.fail(ctx, "apply", nil); err != nil {
		return err
	}
	return f.Client.Apply(ctx, obj, opts...)
}

func (f *faulty) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := f.fail(ctx, "create", obj); err != nil {
		return err
	}
	if err := f.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	return f.lose(ctx, "create", obj)
}

func (f *faulty) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := f.fail(ctx, "delete", obj); err != nil {
		return err
	}
	if err := f.Client.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	return f.lose(ctx, "delete", obj)
}

func (f *faulty) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := f.fail(ctx, "update", obj); err != nil {
		return err
	}
	return f.Client.Update(ctx, obj, opts...)
}

func (f *faulty) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := f.fail(ctx, "patch", obj); err != nil {
		return err
	}
	return f.Client.Patch(ctx, obj, patch, opts...)
}

func (f *faulty) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := f.fail(ctx, "deletecollection", obj); err != nil {
		return err
	}
	return f.Client.DeleteAllOf(ctx, obj, opts...)
}

func (f *faulty) Status() client.SubResourceWriter { return f.SubResource("status") }

func (f *faulty) SubResource(sub string) client.SubResourceClient {
	return &faultySub{SubResourceClient: f.Client.SubResource(sub), f: f, sub: sub}
}

type faultySub struct {
	client.SubResourceClient
	f   *faulty
	sub string
}

func (s *faultySub) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	s.f.delay(ctx)
	return s.SubResourceClient.Get(ctx, obj, subResource, opts...)
}

func (s *faultySub) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	if err := s.f.fail(ctx, "create/"+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Create(ctx, obj, subResource, opts...)
}

func (s *faultySub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.f.fail(ctx, "update/"+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *faultySub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.f.fail(ctx, "patch/"+s.sub, obj); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *faultySub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := s.f.fail(ctx, "apply/"+s.sub, nil); err != nil {
		return err
	}
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}
