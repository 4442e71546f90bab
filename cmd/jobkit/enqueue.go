package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// enqueueLine is one line of an --file NDJSON file (docs/cli.md).
type enqueueLine struct {
	Kind  string          `json:"kind"`
	Args  json.RawMessage `json:"args"`
	ID    string          `json:"id"`
	Key   string          `json:"key"`
	Group string          `json:"group"`
	Dedup string          `json:"dedup"`
	Delay string          `json:"delay"` // Go duration: "90s", "10m"
	Queue string          `json:"queue"` // URL or name; default --queue
}

// LineError is a line of an --file the CLI refused before sending anything.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// enqueueBatchSize is the number of jobs handed to one EnqueueBatch call (it makes SendMessageBatch
// calls of 10); progress advances after each.
const enqueueBatchSize = 100

// enqueueCmd is `jobkit enqueue`: its flags, their check, and the two ways to run.
type enqueueCmd struct {
	argsJSON string
	file     string
	progress string
	opts     jobs.EnqueueOpts
}

func newEnqueueCmd(a *app) *cobra.Command {
	e := &enqueueCmd{}
	cmd := &cobra.Command{
		Use:   "enqueue KIND --args JSON | --file FILE",
		Short: "Enqueue a job, or a file of jobs (NDJSON) with progress",
		Long: `Enqueue one job of KIND with --args (a JSON value, default {}), or every line of an
NDJSON file with --file (- for stdin), through the jobs producer client (EnqueueBatch:
SendMessageBatch calls of 10).

A line of the file is
  {"kind":"email.send","args":{"to":"a@example.com"},"id":"","key":"","group":"","dedup":"","delay":"90s","queue":""}
where only kind is required; queue (URL or name) defaults to --queue, delay is a Go
duration up to 15m (Standard queues), group is required on FIFO queues. The whole file
is checked before anything is sent: a bad line sends nothing.

Progress goes to stderr (a bar on a terminal, plain lines otherwise); the final count to
stdout.`,
		Example: `  jobkit enqueue email.send --args '{"to":"a@example.com"}' --queue email
  jobkit enqueue ledger.post --args '{"account":"42","cents":100}' --group 42 --queue ledger
  jobkit enqueue report.build --delay 10m --queue reports
  jobkit enqueue --file jobs.ndjson --queue email
  generate-jobs | jobkit enqueue --file - --queue email --progress plain`,
		PreRunE: func(_ *cobra.Command, args []string) error { return e.check(args) },
		RunE: a.verb(func(s *session, args []string) error {
			if e.file != "" {
				return e.runFile(s)
			}
			return e.runOne(s, args[0])
		}),
	}
	f := cmd.Flags()
	f.StringVar(&e.argsJSON, "args", "{}", "the job's args as JSON")
	f.StringVar(&e.opts.ID, "id", "", "job id (default: a new ULID)")
	f.StringVar(&e.opts.Key, "key", "", "idempotency key (default: the job id)")
	f.StringVar(&e.opts.GroupID, "group", "", "FIFO message group id (required on FIFO queues)")
	f.StringVar(&e.opts.DedupID, "dedup", "", "FIFO deduplication id (default: the job id)")
	f.DurationVar(&e.opts.Delay, "delay", 0, "deliver after this delay (up to 15m, Standard queues)")
	f.StringVar(&e.file, "file", "", "enqueue every line of this NDJSON file (- for stdin)")
	f.StringVar(&e.progress, "progress", progressAuto, "progress display on stderr for --file: auto (bar on a terminal), bar, plain, none")
	return cmd
}

// check validates the command line before anything is called.
func (e *enqueueCmd) check(args []string) error {
	switch {
	case e.file != "" && len(args) > 0:
		return usageError{errors.New("give KIND or --file, not both")}
	case e.file == "" && len(args) != 1:
		return usageError{errors.New("enqueue takes one KIND (or --file FILE)")}
	case e.file == "" && !json.Valid([]byte(e.argsJSON)):
		return usageError{fmt.Errorf("--args is not valid JSON: %q", e.argsJSON)}
	}
	return checkProgress(e.progress)
}

// runOne enqueues one job of kind to the queue the flags name.
func (e *enqueueCmd) runOne(s *session, kind string) error {
	q, err := s.one(false)
	if err != nil {
		return err
	}
	if q.URL == "" {
		return fmt.Errorf("%w: no job queue to send to (pass --queue)", inspect.ErrNoQueues)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(s.cfg), jobs.ClientOptions{DefaultQueueURL: q.URL})
	if err != nil {
		return err
	}
	res, err := client.Enqueue(s.ctx, jobs.RawArgs{KindName: kind, JSON: json.RawMessage(e.argsJSON)}, &e.opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "enqueued %s job %s to %s (message %s)", safe(res.Kind, kindWidth), safe(res.ID, idWidth),
		safe(awsarn.QueueName(res.QueueURL), nameWidth), safe(res.MessageID, idWidth))
	if !res.DeliverAt.IsZero() {
		fmt.Fprintf(s.stdout, ", visible at %s", res.DeliverAt.Format(time.RFC3339))
	}
	fmt.Fprintln(s.stdout)
	return nil
}

// readJobs parses and checks an NDJSON file of jobs. Every bad line is reported (the first 20).
func readJobs(r io.Reader, fifo func(queue string) bool) ([]enqueueLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), jobs.MaxMessageSize+4096)
	var (
		lines []enqueueLine
		errs  []error
		n     int
	)
	bad := func(err error) {
		if len(errs) < 20 {
			errs = append(errs, &LineError{Line: n, Err: err})
		}
	}
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l enqueueLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			bad(fmt.Errorf("not a job object: %w", err))
			continue
		}
		switch {
		case l.Kind == "":
			bad(jobs.ErrEmptyKind)
			continue
		case len(l.Args) > 0 && !json.Valid(l.Args):
			bad(fmt.Errorf("%w: args are not valid JSON", jobs.ErrEncodeArgs))
			continue
		}
		if l.Delay != "" {
			d, err := time.ParseDuration(l.Delay)
			switch {
			case err != nil || d < 0:
				bad(fmt.Errorf("%w: %q (want a Go duration such as 90s)", jobs.ErrInvalidDelay, l.Delay))
				continue
			case d > jobs.MaxSQSDelay:
				bad(fmt.Errorf("%w: %s", jobs.ErrDelayTooLong, d))
				continue
			case d > 0 && fifo(l.Queue):
				bad(jobs.ErrDelayOnFIFO)
				continue
			}
		}
		if fifo(l.Queue) && l.Group == "" {
			bad(jobs.ErrGroupRequired)
			continue
		}
		if !fifo(l.Queue) && l.Dedup != "" {
			bad(jobs.ErrDedupOnStandard)
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read jobs: line %d: %w", n+1, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nothing enqueued: %w", errors.Join(errs...))
	}
	return lines, nil
}

// runFile enqueues every job of an NDJSON file: read and check it all, then send it in chunks
// with progress on stderr, then report.
func (e *enqueueCmd) runFile(s *session) error {
	rep, err := newReporter(s.stderr, e.progress, "enqueue")
	if err != nil {
		return err
	}
	r, closeFile, err := openJobs(s.stdin, e.file)
	if err != nil {
		return err
	}
	defer closeFile()
	urls := &queueRefs{s: s, urls: map[string]string{}}
	lines, err := readJobs(r, func(ref string) bool { return awsarn.IsFIFO(urls.url(ref)) })
	if urls.err != nil {
		return urls.err
	}
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return errors.New("nothing to enqueue: the file has no jobs")
	}
	// Every job names its queue explicitly (EnqueueOpts.Queue); the default is only required.
	client, err := jobs.NewClient(sqs.NewFromConfig(s.cfg), jobs.ClientOptions{DefaultQueueURL: urls.urls[lines[0].Queue]})
	if err != nil {
		return err
	}
	start := time.Now()
	sum := sendJobs(s.ctx, client, lines, urls.urls, rep)
	rep.finish()
	return sum.report(s, time.Since(start))
}

// openJobs opens the --file argument; "-" is stdin.
func openJobs(stdin io.Reader, file string) (io.Reader, func(), error) {
	if file == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// queueRefs resolves the queue references of a file once each; "" is the queue the flags name,
// resolved only if a line needs it. The first error is kept.
type queueRefs struct {
	s    *session
	urls map[string]string
	err  error
}

func (q *queueRefs) url(ref string) string {
	if u, ok := q.urls[ref]; ok {
		return u
	}
	var u string
	var err error
	if ref == "" {
		var one inspect.Queue
		if one, err = q.s.one(false); err == nil {
			u = one.URL
		}
	} else {
		u, err = q.s.queueURL(ref)
	}
	if err != nil && q.err == nil {
		q.err = err
	}
	q.urls[ref] = u
	return u
}

// enqueueSummary counts a file's sends.
type enqueueSummary struct {
	total, done, failed int64
	firstErrs           []string // the first 20 failures
	interrupted         error
}

// sendJobs sends lines in chunks of enqueueBatchSize, reporting progress after each chunk, and
// stops early when ctx ends.
func sendJobs(ctx context.Context, client *jobs.Client, lines []enqueueLine, urls map[string]string, rep reporter) enqueueSummary {
	sum := enqueueSummary{total: int64(len(lines))}
	rep.update(0, sum.total, "enqueued")
	for off := 0; off < len(lines); off += enqueueBatchSize {
		if ctx.Err() != nil {
			sum.interrupted = ctx.Err()
			break
		}
		chunk := lines[off:min(off+enqueueBatchSize, len(lines))]
		batch := make([]jobs.BatchJob, len(chunk))
		for i, l := range chunk {
			var delay time.Duration
			if l.Delay != "" {
				delay, _ = time.ParseDuration(l.Delay)
			}
			batch[i] = jobs.BatchJob{
				Args: jobs.RawArgs{KindName: l.Kind, JSON: l.Args},
				Opts: &jobs.EnqueueOpts{ID: l.ID, Key: l.Key, GroupID: l.Group, DedupID: l.Dedup, Delay: delay, Queue: urls[l.Queue]},
			}
		}
		results, _ := client.EnqueueBatch(ctx, batch)
		for i, r := range results {
			if r.Err == nil {
				sum.done++
				continue
			}
			sum.failed++
			if len(sum.firstErrs) < 20 {
				sum.firstErrs = append(sum.firstErrs, fmt.Sprintf("job %d (%s %s): %v", off+i+1, r.Kind, r.ID, r.Err))
			}
		}
		detail := "enqueued"
		if sum.failed > 0 {
			detail = fmt.Sprintf("enqueued, %d failed", sum.failed)
		}
		rep.update(sum.done+sum.failed, sum.total, detail)
	}
	if sum.interrupted == nil && ctx.Err() != nil {
		sum.interrupted = ctx.Err()
	}
	return sum
}

// report prints the failures on stderr and the count on stdout, and returns the verb's error.
func (sum *enqueueSummary) report(s *session, took time.Duration) error {
	for _, e := range sum.firstErrs {
		fmt.Fprintln(s.stderr, "failed:", safe(e, lineWidth))
	}
	fmt.Fprintf(s.stdout, "enqueued %d of %d jobs (%d failed) in %s\n", sum.done, sum.total, sum.failed, took.Round(time.Millisecond))
	if sum.interrupted != nil {
		return fmt.Errorf("interrupted after %d of %d jobs: %w", sum.done+sum.failed, sum.total, sum.interrupted)
	}
	if sum.failed > 0 {
		return fmt.Errorf("%d of %d jobs not enqueued", sum.failed, sum.total)
	}
	return nil
}
