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

package rollout

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// TestComputeRandomInputs checks FuzzCompute's rules on inputs drawn
// uniformly from its whole space, seeded, so that every run checks the same
// ones. The coverage-guided fuzzer of `make fuzz` explores from its seeds
// and missed for 200,000 inputs what this found within seconds (six of the
// seven inputs in testdata/fuzz/FuzzCompute were found this way: small
// clusters where two opt-ins meet). ROLLOUT_RANDOM_INPUTS and
// ROLLOUT_RANDOM_SEED set how many and which (1,000,000 is about 30 s a
// core); a failure prints the input as a corpus file to keep.
func TestComputeRandomInputs(t *testing.T) {
	inputs, seed := 20_000, uint64(1)
	if v, err := strconv.Atoi(os.Getenv("ROLLOUT_RANDOM_INPUTS")); err == nil {
		inputs = v
	}
	if v, err := strconv.ParseUint(os.Getenv("ROLLOUT_RANDOM_SEED"), 10, 64); err == nil {
		seed = v
	}
	if testing.Short() {
		inputs = min(inputs, 2_000)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range inputs {
		a := randomArgs(r)
		if msg := a.failure(); msg != "" {
			t.Fatalf("input %d of seed %d: %s\nsave it as testdata/fuzz/FuzzCompute/<name> and fix the planner or the rule:\n%s",
				i, seed, msg, a.corpus())
		}
	}
}

// fuzzArgs are FuzzCompute's arguments.
type fuzzArgs struct {
	replicas, surge, unavailable, minReady, flags uint8
	podData                                       []byte
	optIn                                         uint8
	labels                                        uint64
}

// randomArgs draws every argument uniformly, with 1 to 10 pods: the rules
// that break do so on few pods, where each pod's state matters.
func randomArgs(r *rand.Rand) fuzzArgs {
	b := func() uint8 { return uint8(r.UintN(256)) }
	a := fuzzArgs{replicas: b(), surge: b(), unavailable: b(), minReady: b(), flags: b()}
	a.podData = make([]byte, fuzzPodBytes*(1+r.IntN(10)))
	for i := range a.podData {
		a.podData[i] = b()
	}
	a.optIn, a.labels = b(), r.Uint64()
	return a
}

// failure runs FuzzCompute's body on a and returns its first complaint, or "".
func (a fuzzArgs) failure() (msg string) {
	defer func() {
		if e := recover(); e != nil {
			f, ok := e.(complaint)
			if !ok {
				panic(e)
			}
			msg = string(f)
		}
	}()
	fuzzCompute(firstComplaint{}, a.replicas, a.surge, a.unavailable, a.minReady, a.flags, a.podData, a.optIn, a.labels)
	return ""
}

// corpus is a as a file of testdata/fuzz/FuzzCompute.
func (a fuzzArgs) corpus() string {
	return fmt.Sprintf("go test fuzz v1\nuint8(%d)\nuint8(%d)\nuint8(%d)\nuint8(%d)\nuint8(%d)\n[]byte(%q)\nuint8(%d)\nuint64(%d)\n",
		a.replicas, a.surge, a.unavailable, a.minReady, a.flags, a.podData, a.optIn, a.labels)
}

// complaint is what firstComplaint panics with.
type complaint string

// firstComplaint is a testing.TB that stops at the first complaint of the
// checks, so that a failing input can be reported with its arguments.
type firstComplaint struct{ testing.TB }

func (firstComplaint) Helper()                   {}
func (firstComplaint) Fatal(a ...any)            { panic(complaint(fmt.Sprint(a...))) }
func (firstComplaint) Fatalf(f string, a ...any) { panic(complaint(fmt.Sprintf(f, a...))) }
func (firstComplaint) Error(a ...any)            { panic(complaint(fmt.Sprint(a...))) }
func (firstComplaint) Errorf(f string, a ...any) { panic(complaint(fmt.Sprintf(f, a...))) }
