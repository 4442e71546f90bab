package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// session is what every verb starts from: the command's context and streams, the AWS
// configuration the global flags describe, and an Inspector over it. Verbs check their own flags
// in PreRunE (usage errors, before any AWS call) and do their work in a RunE made by app.verb or
// app.onDLQ, so none of them repeats this prologue.
type session struct {
	a      *app
	ctx    context.Context
	cfg    aws.Config
	in     *inspect.Inspector
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// begin opens a session for cmd.
func (a *app) begin(cmd *cobra.Command) (*session, error) {
	ctx := cmd.Context()
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &session{
		a: a, ctx: ctx, cfg: cfg, in: inspect.New(cfg),
		stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(),
	}, nil
}

// verb makes a cobra RunE that opens a session and hands it to fn.
func (a *app) verb(fn func(s *session, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := a.begin(cmd)
		if err != nil {
			return err
		}
		return fn(s, args)
	}
}

// onDLQ makes a cobra RunE for a verb on one dead-letter queue: the one the flags (or the stack)
// name, refusing to guess between several.
func (a *app) onDLQ(fn func(s *session, q inspect.Queue, args []string) error) func(*cobra.Command, []string) error {
	return a.verb(func(s *session, args []string) error {
		q, err := s.one(true)
		if err != nil {
			return err
		}
		return fn(s, q, args)
	})
}

// queues returns the queues the flags (or the stack) name.
func (s *session) queues() ([]inspect.Queue, error) {
	qs, err := s.in.Resolve(s.ctx, s.a.target())
	if errors.Is(err, inspect.ErrStackNotFound) {
		return nil, fmt.Errorf("%w (pass --queue URL, or --stack NAME for the deployed stack)", err)
	}
	return qs, err
}

// one returns the single queue the verb works on (one with a DLQ if needDLQ), refusing to guess
// between several.
func (s *session) one(needDLQ bool) (inspect.Queue, error) {
	qs, err := s.queues()
	if err != nil {
		return inspect.Queue{}, err
	}
	var pick []inspect.Queue
	for _, q := range qs {
		if !needDLQ || q.DLQURL != "" {
			pick = append(pick, q)
		}
	}
	switch len(pick) {
	case 1:
		return pick[0], nil
	case 0:
		if needDLQ {
			return inspect.Queue{}, fmt.Errorf("%w: %s (pass --dlq)", inspect.ErrNoDLQ, names(qs))
		}
		return inspect.Queue{}, inspect.ErrNoQueues
	default:
		return inspect.Queue{}, usageError{fmt.Errorf("%d queues (%s): choose one with --queue NAME", len(pick), names(pick))}
	}
}

// queueURL turns a queue reference (URL, stack output name or queue name) into its URL.
func (s *session) queueURL(ref string) (string, error) {
	qs, err := s.in.Resolve(s.ctx, inspect.Target{Stack: s.a.stack, Queues: []string{ref}})
	if err != nil {
		return "", err
	}
	return qs[0].URL, nil
}

// print writes doc() as JSON when asJSON is set, and else calls human with stdout.
func (s *session) print(asJSON bool, doc func() any, human func(w io.Writer)) error {
	if asJSON {
		return writeJSON(s.stdout, doc())
	}
	human(s.stdout)
	return nil
}

func names(qs []inspect.Queue) string {
	n := make([]string, len(qs))
	for i, q := range qs {
		n[i] = q.Name
	}
	return strings.Join(n, ", ")
}
