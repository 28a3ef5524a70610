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

// Package plugin implements kubectl-mydeployment, a kubectl plugin that gives
// MyDeployments the rollout commands kubectl has for Deployments (status,
// history, undo, restart, pause, resume) and a get table, with kubectl's
// wording, the canary commands a Deployment lacks (partition, promote), and
// migrate and eject, which move a Deployment's pods to a MyDeployment and
// back with no pod restarted.
package plugin

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// IOStreams are the plugin's standard streams (genericiooptions.IOStreams).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Options configure the command tree. Zero fields get defaults.
type Options struct {
	IOStreams
	// Now returns the current time (restart's annotation, get's AGE).
	Now func() time.Time
	// PollInterval is how often rollout status, migrate and eject re-read
	// what they wait for.
	PollInterval time.Duration
	// StopAfter names a step of migrate or eject after which the command
	// stops as if killed (StopAfterEnv); "" runs them through.
	StopAfter string
}

// Run executes the plugin with args (without the program name) and returns
// the process exit code: 0 on success, 1 with "error: ..." on ErrOut
// otherwise, as kubectl does.
func Run(args []string, o Options) int {
	cmd := NewRootCommand(o)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "error: %v\n", err)
		return 1
	}
	return 0
}

// NewRootCommand builds "kubectl mydeployment" and its subcommands.
func NewRootCommand(o Options) *cobra.Command {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	cmd := &cobra.Command{
		Use:           "kubectl-mydeployment",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mydeployment"},
		Short:         "Manage MyDeployments (apps.mydeployment.io) like kubectl manages Deployments",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(o.In)
	cmd.SetOut(o.Out)
	cmd.SetErr(o.ErrOut)
	f := newFactory(cmd.PersistentFlags())

	rollout := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a MyDeployment",
	}
	rollout.AddCommand(
		newStatusCommand(f, &o),
		newHistoryCommand(f, &o),
		newUndoCommand(f, &o),
		newRestartCommand(f, &o),
		newPauseCommand(f, &o, true),
		newPauseCommand(f, &o, false),
		newPartitionCommand(f, &o),
		newPromoteCommand(f, &o),
		newRetryCommand(f, &o),
	)
	cmd.AddCommand(rollout, newGetCommand(f, &o), newMigrateCommand(f, &o), newEjectCommand(f, &o))
	enableCompletion(cmd, f)
	return cmd
}
