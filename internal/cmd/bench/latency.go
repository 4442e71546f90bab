package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/event"
)

// The latency part of the e2e benchmark (run on its stack, after the throughput rounds) measures
// how long a job waits, at a pace the stack keeps up with: latencyJobs jobs, one every
// latencyGap, so what is timed is the path a job takes and not a backlog.
//
//   - enqueue → start: from the call of jobs.Client.Enqueue to the runtime's started event
//     (event.Started, attempt 1), on the email queue (its mapping gathers up to 25 records for
//     at most 2 s: MaxBatchingWindow) and on the notify queue's default lane (the Worker
//     construct's defaults: batches of 10, no window).
//   - failure → retry: notify jobs (no batching window) whose first attempt fails
//     (instrument.Faults): from the runtime's retried event to the second attempt's started
//     event; the retry's own delay (full jitter up to the backoff base of 1 s, in SQS's whole
//     seconds: 0 or 1 s) is in it, and latency_retry_late_ms is what comes on top of that delay.
//   - raw send → receive: a SendMessage loop at the same pace on a queue of the same emulator,
//     one consumer long-polling it (WaitTimeSeconds 20): the floor the emulator sets.
//
// Times are wall-clock times of one machine: the producer's, the functions' events and the raw
// loop's. Each figure is a percentile over the jobs of the run.
//
//	latency_enqueue_to_start_ms_p50, _p99         email (2 s batching window)
//	latency_enqueue_to_start_nowindow_ms_p50, _p99  notify's default lane (no window)
//	latency_failure_to_retry_ms_p50, _p99         notify, attempt 1 failed → attempt 2 started
//	latency_retry_delay_ms_p50                    the backoff delay the runtime chose
//	latency_retry_late_ms_p50, _p99               failure → retry minus that delay
//	latency_raw_send_to_receive_ms_p50, _p99      the raw loop
const (
	latencyJobs    = 100
	latencyGap     = 50 * time.Millisecond
	latencyTimeout = 2 * time.Minute
)

// latencyWatch reads the runtime's events in the functions' output: when each job started
// (by attempt) and when each attempt failed, with the retry delay it was given.
type latencyWatch struct {
	mu      sync.Mutex
	started map[string]map[int]time.Time // job id → attempt → started
	retried map[string]event.Event       // job id → the Retried event of its first attempt
}

func newLatencyWatch() *latencyWatch {
	return &latencyWatch{started: map[string]map[int]time.Time{}, retried: map[string]event.Event{}}
}

func (w *latencyWatch) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(p, []byte("\n")) {
		e, ok := event.Parse(line)
		if !ok {
			continue
		}
		w.mu.Lock()
		switch {
		case e.Type == event.Started:
			if w.started[e.JobID] == nil {
				w.started[e.JobID] = map[int]time.Time{}
			}
			if _, seen := w.started[e.JobID][e.Attempt]; !seen {
				w.started[e.JobID][e.Attempt] = e.Time
			}
		case e.Type == event.Retried && e.Attempt == 1:
			w.retried[e.JobID] = e
		}
		w.mu.Unlock()
	}
	return len(p), nil
}

// startedAt returns when job id's attempt started.
func (w *latencyWatch) startedAt(id string, attempt int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.started[id][attempt]
	return t, ok
}

func (w *latencyWatch) retriedEvent(id string) (event.Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.retried[id]
	return e, ok
}

// latency runs the latency part on the e2e sides' stack, whose output s.watch reads.
func (s *e2eSides) latency(ctx context.Context, emit func(string, any)) error {
	email := func(i int) jobs.JobArgs {
		return samplejobs.SendEmail{To: fmt.Sprintf("lat%05d@example.com", i), Subject: "latency"}
	}
	ms, err := s.enqueueToStart(ctx, email)
	if err != nil {
		return fmt.Errorf("email: %w", err)
	}
	emitPercentiles(emit, "latency_enqueue_to_start_ms_", ms)
	notify := func(i int) jobs.JobArgs {
		return samplejobs.SendNotification{User: fmt.Sprintf("lat%05d", i), Text: "latency"}
	}
	ms, err = s.enqueueToStart(ctx, notify)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	emitPercentiles(emit, "latency_enqueue_to_start_nowindow_ms_", ms)
	if err := s.failureToRetry(ctx, emit, func(i int) jobs.JobArgs {
		return instrument.WithFaults(notify(latencyJobs+i), instrument.Faults{FailAttempts: 1})
	}); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	ms, err = s.rawSendToReceive(ctx)
	if err != nil {
		return fmt.Errorf("raw: %w", err)
	}
	emitPercentiles(emit, "latency_raw_send_to_receive_ms_", ms)
	return nil
}

// paced enqueues latencyJobs jobs, one every latencyGap, and returns their ids and when each
// Enqueue was called.
func (s *e2eSides) paced(ctx context.Context, args func(int) jobs.JobArgs) ([]string, []time.Time, error) {
	ids := make([]string, latencyJobs)
	at := make([]time.Time, latencyJobs)
	tick := time.NewTicker(latencyGap)
	defer tick.Stop()
	for i := range latencyJobs {
		// From the call: a long poll may hand the message over before the send's answer is back.
		at[i] = time.Now()
		res, err := s.producer.Enqueue(ctx, args(i), nil)
		if err != nil {
			return nil, nil, err
		}
		ids[i] = res.ID
		<-tick.C
	}
	return ids, at, nil
}

// waitStarted waits until ok holds for every id, or latencyTimeout.
func waitStarted(ids []string, ok func(id string) bool) error {
	deadline := time.Now().Add(latencyTimeout)
	for {
		missing := 0
		for _, id := range ids {
			if !ok(id) {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d jobs not seen after %s", missing, len(ids), latencyTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// enqueueToStart returns each job's time from its enqueue to its first start, in milliseconds.
func (s *e2eSides) enqueueToStart(ctx context.Context, args func(int) jobs.JobArgs) ([]float64, error) {
	ids, at, err := s.paced(ctx, args)
	if err != nil {
		return nil, err
	}
	if err := waitStarted(ids, func(id string) bool { _, ok := s.watch.startedAt(id, 1); return ok }); err != nil {
		return nil, err
	}
	ms := make([]float64, len(ids))
	for i, id := range ids {
		t, _ := s.watch.startedAt(id, 1)
		ms[i] = float64(t.Sub(at[i]).Microseconds()) / 1000
	}
	return ms, nil
}

// failureToRetry enqueues jobs that fail their first attempt and times each failure to the
// second attempt's start.
func (s *e2eSides) failureToRetry(ctx context.Context, emit func(string, any), args func(int) jobs.JobArgs) error {
	ids, _, err := s.paced(ctx, args)
	if err != nil {
		return err
	}
	if err := waitStarted(ids, func(id string) bool { _, ok := s.watch.startedAt(id, 2); return ok }); err != nil {
		return err
	}
	var total, delay, late []float64
	for _, id := range ids {
		failed, ok := s.watch.retriedEvent(id)
		if !ok {
			return fmt.Errorf("job %s started again without a retried event", id)
		}
		again, _ := s.watch.startedAt(id, 2)
		wait := again.Sub(failed.Time)
		total = append(total, float64(wait.Microseconds())/1000)
		delay = append(delay, float64(failed.Delay.Microseconds())/1000)
		late = append(late, float64((wait-failed.Delay).Microseconds())/1000)
	}
	emitPercentiles(emit, "latency_failure_to_retry_ms_", total)
	emit("latency_retry_delay_ms_p50", percentile(delay, 50))
	emitPercentiles(emit, "latency_retry_late_ms_", late)
	return nil
}

// rawSendToReceive sends latencyJobs messages at the same pace onto the raw queue while one
// consumer long-polls and deletes them; it returns each message's time from its send's call to
// the receive's, in milliseconds.
func (s *e2eSides) rawSendToReceive(ctx context.Context) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, latencyTimeout)
	defer cancel()
	received := map[string]time.Time{} // message id → received
	errc := make(chan error, 1)
	go func() {
		for len(received) < latencyJobs {
			out, err := s.raw.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(s.rawQueue), MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
			})
			if err != nil {
				errc <- err
				return
			}
			now := time.Now()
			for _, m := range out.Messages {
				if aws.ToString(m.Body) == latencyBody {
					received[aws.ToString(m.MessageId)] = now
				}
				_, _ = s.raw.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(s.rawQueue), ReceiptHandle: m.ReceiptHandle})
			}
		}
		errc <- nil
	}()
	sent := map[string]time.Time{} // message id → its send returned
	tick := time.NewTicker(latencyGap)
	defer tick.Stop()
	for range latencyJobs {
		start := time.Now()
		out, err := s.raw.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.rawQueue), MessageBody: aws.String(latencyBody)})
		if err != nil {
			return nil, err
		}
		sent[aws.ToString(out.MessageId)] = start
		<-tick.C
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	ms := make([]float64, 0, len(sent))
	for id, at := range sent {
		r, ok := received[id]
		if !ok {
			return nil, fmt.Errorf("message %s sent, not received", id)
		}
		ms = append(ms, float64(r.Sub(at).Microseconds())/1000)
	}
	return ms, nil
}

// latencyBody is the raw loop's latency messages' body.
const latencyBody = `{"latency":true}`

// percentile is the p-th percentile of xs (nearest rank).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// emitPercentiles prints the 50th and 99th percentiles of xs as prefix+"p50" and prefix+"p99".
func emitPercentiles(emit func(string, any), prefix string, xs []float64) {
	emit(prefix+"p50", percentile(xs, 50))
	emit(prefix+"p99", percentile(xs, 99))
}
