package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

// The Powertools benchmark compares jobkit's runtime with Powertools for AWS Lambda (Python) on the
// same 10,000 SQS records in 1,000 batches of 10, in the same run. The records are generated once
// (benchfix.SampleEvents: deterministic) and written to one JSON file; each side decodes that file
// before timing, as its Lambda runtime would hand it decoded events.
//
//   - jobkit: jobs.NewLambdaHandler(…).HandleSQS with a no-op typed worker; its SQS client answers in-process. A
//     batch that succeeds makes no SQS call: a call (a job retried or dead-lettered) fails the
//     run, as a listed record does. The envelope and its args decode into Go structs.
//   - Powertools: BatchProcessor(EventType.SQS) + process_partial_response; the record handler
//     parses the body with Powertools' parser into a pydantic envelope model with an args
//     sub-model and calls a no-op (powertools/handler.py, timed by powertools/bench.py).
//   - The floor: json.Unmarshal of each body into jobs.Envelope, then of its args into the typed
//     struct — what any Go consumer of these messages pays at least.
//
// Each side runs one untimed warm-up pass, then 31 rounds of one pass each over all 10,000
// records, the side that goes first rotating from round to round (the Python peer is a
// long-lived process that runs a pass when asked, powertools/bench.py); a Go pass runs after a
// garbage collection. A side's figure is its best round's wall time divided by 10,000: on a
// shared machine the fastest round is the one least disturbed by other processes, for both sides
// alike. A ratio is the median of the rounds' own ratios, with their spread (*_spread). The
// medians and the process CPU time per message are printed too.
//
//	runtime_overhead_ns_per_msg     jobkit on these records: the canonical runtime figure (the
//	                                runtime benchmark's runtime_one_batch_ns_per_msg repeats one batch)
//	powertools_overhead_ns_per_msg  Powertools on these records
//	runtime_speedup_vs_powertools   powertools / jobkit, median of the rounds
//	decode_floor_ns_per_msg         bare json.Unmarshal of envelope and args
//	runtime_vs_decode_floor         jobkit / floor, median of the rounds
//	*_median_ns_per_msg             the median repetitions (runtime_overhead_median_ns_per_msg, ...)
//	*_cpu_ns_per_msg                process CPU time (user+system, every thread) per message over
//	                                the timed repetitions (runtime_cpu_ns_per_msg, ...)
func init() {
	register("powertools", 30, benchPowertools)
}

const (
	compareRecords     = 10000
	compareBatch       = 10
	compareRepetitions = 31
)

func benchPowertools(ctx context.Context, emit func(string, any)) error {
	root, python, dir, err := peerWorkdir("powertools")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	raw, err := json.Marshal(compareEvents())
	if err != nil {
		return err
	}
	eventsFile := filepath.Join(dir, "events.json")
	if err := os.WriteFile(eventsFile, raw, 0o644); err != nil {
		return err
	}
	var evs []events.SQSEvent
	if err := json.Unmarshal(raw, &evs); err != nil {
		return fmt.Errorf("decode the events file: %w", err)
	}

	// A deadline as Lambda gives one: the runtime derives the jobs' context from it.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	rtPass, err := runtimePass(ctx, evs)
	if err != nil {
		return err
	}
	peer, err := startPeer(ctx, python, filepath.Join(peerDir(root), "bench.py"), eventsFile)
	if err != nil {
		return err
	}
	defer peer.stop()
	rt, floor, pt, err := comparePasses(rtPass, floorPass(evs), peer)
	if err != nil {
		return err
	}
	ns := func(v float64) int64 { return int64(v + 0.5) }
	emit("runtime_overhead_ns_per_msg", ns(rt.best))
	emit("powertools_overhead_ns_per_msg", ns(pt.best))
	emitRatio(emit, "runtime_speedup_vs_powertools", pt.wall, rt.wall)
	emit("decode_floor_ns_per_msg", ns(floor.best))
	emitRatio(emit, "runtime_vs_decode_floor", rt.wall, floor.wall)
	emit("runtime_overhead_median_ns_per_msg", ns(rt.median))
	emit("powertools_overhead_median_ns_per_msg", ns(pt.median))
	emit("decode_floor_median_ns_per_msg", ns(floor.median))
	emit("runtime_cpu_ns_per_msg", ns(rt.cpu))
	emit("powertools_cpu_ns_per_msg", ns(pt.cpu))
	emit("decode_floor_cpu_ns_per_msg", ns(floor.cpu))
	return nil
}

// comparePasses runs one untimed pass of each side, then compareRepetitions rounds of one pass
// each, the side that goes first rotating from round to round. A Go pass runs after a garbage
// collection and is timed in wall time and process CPU time; the peer times its own.
func comparePasses(rtPass, floorPass func() error, peer *peerProcess) (rt, floor, pt compareTiming, err error) {
	if err = rtPass(); err == nil {
		err = floorPass()
	}
	if err == nil {
		_, err = peer.passFigures()
	}
	if err != nil {
		return
	}
	goPass := func(pass func() error, t *compareTiming) error {
		runtime.GC()
		c0, start := cpuTime(), time.Now()
		if err := pass(); err != nil {
			return err
		}
		t.wall = append(t.wall, float64(time.Since(start).Nanoseconds())/compareRecords)
		t.cpu += float64((cpuTime() - c0).Nanoseconds()) / compareRecords
		return nil
	}
	sides := []func() error{
		func() error { return goPass(rtPass, &rt) },
		func() error { return goPass(floorPass, &floor) },
		func() error {
			f, err := peer.passFigures()
			if err != nil {
				return err
			}
			if len(f) < 2 {
				return fmt.Errorf("powertools peer: want wall and CPU figures, got %v", f)
			}
			pt.wall, pt.cpu = append(pt.wall, f[0]), pt.cpu+f[1]
			return nil
		},
	}
	for round := range compareRepetitions {
		for k := range sides {
			if err = sides[(round+k)%len(sides)](); err != nil {
				return
			}
		}
	}
	for _, t := range []*compareTiming{&rt, &floor, &pt} {
		t.best, t.median, t.cpu = slices.Min(t.wall), median(t.wall), t.cpu/compareRepetitions
	}
	return
}

// compareTiming is a side's ns per message: each round's wall time, the best and median rounds,
// and the process CPU time per message, averaged over the rounds.
type compareTiming struct {
	wall              []float64
	best, median, cpu float64
}

// compareEvents returns the 10,000 sample records in batches of 10, with the fields a real SQS
// event carries (an MD5 of the body, empty message attributes), so a peer that validates whole
// records sees a valid event.
func compareEvents() []events.SQSEvent {
	evs := benchfix.SampleEvents(compareRecords, compareBatch)
	for i := range evs {
		for j := range evs[i].Records {
			r := &evs[i].Records[j]
			sum := md5.Sum([]byte(r.Body))
			r.Md5OfBody = hex.EncodeToString(sum[:])
			r.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
	}
	return evs
}

// inProcessSQS answers every SQS call with an empty success, in process, and counts the calls.
// A batch whose jobs all succeed makes none: a call means a job was retried or dead-lettered.
type inProcessSQS struct{ calls *atomic.Int64 }

func (t inProcessSQS) Do(req *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		Body:       io.NopCloser(strings.NewReader("{}")),
		Request:    req,
	}, nil
}

// runtimePass returns a pass of jobkit's runtime over evs.
func runtimePass(ctx context.Context, evs []events.SQSEvent) (func() error, error) {
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[benchfix.SampleArgs](func(context.Context, *jobs.Job[benchfix.SampleArgs]) error { return nil }))
	var calls atomic.Int64
	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://sqs.invalid"),
		Credentials:  aws.AnonymousCredentials{},
		// Counts the dead-letter sends; a heartbeat (a batch that outlives the watchdog's first
		// tick on a loaded machine) is the runtime's own work and a retry lists its record.
		HTTPClient: sendCounter{calls: &calls},
	})
	cfg := jobstest.Config(client)
	cfg.Metrics = io.Discard
	cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	handler := jobs.NewLambdaHandler(workers, cfg).HandleSQS
	pass := func() error {
		for _, ev := range evs {
			resp, err := handler(ctx, ev)
			if err != nil {
				return err
			}
			if len(resp.BatchItemFailures) > 0 {
				return fmt.Errorf("jobkit runtime: %d records of a batch failed", len(resp.BatchItemFailures))
			}
		}
		if n := calls.Load(); n > 0 {
			return fmt.Errorf("jobkit runtime: %d dead-letter SQS calls: some jobs did not succeed", n)
		}
		return nil
	}
	return pass, nil
}

// decodeSink keeps the floor's decoded values alive.
var decodeSink struct {
	env  jobs.Envelope
	args benchfix.SampleArgs
}

// floorPass returns a pass decoding every body with encoding/json.
func floorPass(evs []events.SQSEvent) func() error {
	return func() error {
		for i := range evs {
			for j := range evs[i].Records {
				var env jobs.Envelope
				if err := json.Unmarshal([]byte(evs[i].Records[j].Body), &env); err != nil {
					return err
				}
				var args benchfix.SampleArgs
				if err := json.Unmarshal(env.Args, &args); err != nil {
					return err
				}
				decodeSink.env, decodeSink.args = env, args
			}
		}
		return nil
	}
}
