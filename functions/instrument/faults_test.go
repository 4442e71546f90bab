package instrument_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/jobstest"
)

func TestFaultsInject(t *testing.T) {
	t.Parallel()
	f := instrument.Faults{FailAttempts: 2}
	for attempt, wantFail := range map[int]bool{1: true, 2: true, 3: false, 4: false} {
		err := f.Inject(attempt)
		if wantFail {
			require.ErrorIs(t, err, instrument.ErrInjected, "attempt %d", attempt)
			var cancel *jobs.CancelError
			require.False(t, errors.As(err, &cancel), "an injected failure is retryable")
		} else {
			require.NoError(t, err, "attempt %d", attempt)
		}
	}
	err := instrument.Faults{Poison: true}.Inject(1)
	var cancel *jobs.CancelError
	require.True(t, errors.As(err, &cancel), "poison cancels")
	require.ErrorIs(t, err, instrument.ErrPoison)
	require.NoError(t, instrument.Faults{}.Inject(1))
}

// Faults travel in the args JSON after the job's own fields; the sample's args ignore them.
func TestWithFaultsJSON(t *testing.T) {
	t.Parallel()
	args := instrument.WithFaults(samplejobs.SendEmail{To: "a@example.com", Subject: "hi"}, instrument.Faults{FailAttempts: 2, Poison: true})
	require.Equal(t, samplejobs.KindSendEmail, args.Kind())
	b, err := json.Marshal(args)
	require.NoError(t, err)
	require.Equal(t, `{"to":"a@example.com","subject":"hi","fail_attempts":2,"poison":true}`, string(b))
	require.Equal(t, instrument.Faults{FailAttempts: 2, Poison: true}, instrument.FaultsOf(b))

	var decoded samplejobs.SendEmail
	require.NoError(t, json.Unmarshal(b, &decoded))
	require.Equal(t, samplejobs.SendEmail{To: "a@example.com", Subject: "hi"}, decoded)

	plain := samplejobs.TranscodeVideo{VideoID: "v"}
	require.Equal(t, jobs.JobArgs(plain), instrument.WithFaults(plain, instrument.Faults{}), "no faults: the args as they are")
	require.Equal(t, instrument.Faults{}, instrument.FaultsOf(json.RawMessage(`[1]`)))
	require.Equal(t, instrument.Faults{}, instrument.FaultsOf(nil))

	for _, tc := range []struct {
		faulty instrument.Faulty
		want   string
	}{
		{instrument.Faulty{Args: emptyArgs{}, Faults: instrument.Faults{OverrunMS: 300, Crash: true}}, `{"overrun_ms":300,"crash":true}`},
		{instrument.Faulty{Args: plain}, `{"video_id":"v","seconds":0}`},
	} {
		b, err := json.Marshal(tc.faulty)
		require.NoError(t, err)
		require.JSONEq(t, tc.want, string(b))
		require.Equal(t, tc.faulty.Faults, instrument.FaultsOf(b))
	}
}

type emptyArgs struct{}

func (emptyArgs) Kind() string { return "empty" }

// Every sample worker, run through the registry as the runtime runs it, decodes args carrying
// faults exactly as without them: the fault fields are unknown to the sample args.
func TestSampleArgsIgnoreFaultFields(t *testing.T) {
	t.Parallel()
	var got []jobs.JobArgs
	workers := jobs.NewWorkers()
	jobs.AddWorker(workers, jobs.WorkFunc[samplejobs.SendEmail](func(_ context.Context, j *jobs.Job[samplejobs.SendEmail]) error {
		got = append(got, j.Args)
		return nil
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[samplejobs.PostLedger](func(_ context.Context, j *jobs.Job[samplejobs.PostLedger]) error {
		got = append(got, j.Args)
		return nil
	}))
	jobs.AddWorker(workers, jobs.WorkFunc[samplejobs.TranscodeVideo](func(_ context.Context, j *jobs.Job[samplejobs.TranscodeVideo]) error {
		got = append(got, j.Args)
		return nil
	}))
	want := []jobs.JobArgs{
		samplejobs.SendEmail{To: "a@example.com", Subject: "s"},
		samplejobs.PostLedger{Account: "a", PostingID: "p", AmountCents: 3, Seq: 1},
		samplejobs.TranscodeVideo{VideoID: "v", Seconds: 2},
	}
	for _, a := range want {
		require.NoError(t, jobstest.Run(context.Background(), workers, instrument.WithFaults(a, instrument.Faults{FailAttempts: 1000, Poison: true}), nil))
	}
	require.Equal(t, want, got)
}

// Binaries names real packages: each sample function and its instrumented binary.
func TestBinaries(t *testing.T) {
	t.Parallel()
	require.Len(t, instrument.Binaries, 4)
	for src, bin := range instrument.Binaries {
		for _, dir := range []string{src, bin} {
			_, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(dir), "main.go"))
			require.NoError(t, err, dir)
		}
	}
}

// An overrun job does its work, then returns the overrun past its context's deadline, on its
// first attempt only.
func TestFaultsOverrun(t *testing.T) {
	t.Parallel()
	f := instrument.Faults{OverrunMS: 300}
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer cancel()
	require.Equal(t, 1300*time.Millisecond, f.Overrun(ctx, 1, now))
	require.Zero(t, f.Overrun(ctx, 2, now), "only the first attempt")
	require.Equal(t, 300*time.Millisecond, f.Overrun(context.Background(), 1, now), "no deadline: the overrun itself")
	require.Zero(t, instrument.Faults{}.Overrun(ctx, 1, now))

	b, err := json.Marshal(instrument.WithFaults(samplejobs.SendEmail{To: "a@example.com"}, f))
	require.NoError(t, err)
	require.Equal(t, `{"to":"a@example.com","subject":"","overrun_ms":300}`, string(b))
	require.Equal(t, f, instrument.FaultsOf(b))

	ran := false
	workers := jobs.NewWorkers()
	workers.Use(instrument.FaultMiddleware())
	jobs.AddWorker(workers, jobs.WorkFunc[samplejobs.SendEmail](func(context.Context, *jobs.Job[samplejobs.SendEmail]) error {
		ran = true
		return nil
	}))
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	start := time.Now()
	require.NoError(t, jobstest.Run(short, workers, instrument.WithFaults(samplejobs.SendEmail{To: "a@example.com"}, instrument.Faults{OverrunMS: 50}), &jobstest.JobOpts{Attempt: 1}))
	require.True(t, ran, "the work is done before the overrun")
	require.GreaterOrEqual(t, time.Since(start), 70*time.Millisecond, "returns past the deadline")
}

// A crash fault kills the process on every delivery, before the worker's work: the test runs
// itself again as a child whose job carries it, and sees it die with status 137, as a killed
// process would, having answered nothing.
func TestFaultsCrashKillsTheProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("INSTRUMENT_CRASH_CHILD") == "1" {
		w := jobs.NewWorkers()
		w.Use(instrument.FaultMiddleware())
		jobs.AddWorker(w, jobs.WorkFunc[samplejobs.SendEmail](func(context.Context, *jobs.Job[samplejobs.SendEmail]) error {
			os.Stdout.WriteString("worker ran\n")
			return nil
		}))
		args := instrument.WithFaults(samplejobs.SendEmail{To: "a@example.com"}, instrument.Faults{Crash: true})
		_ = jobstest.Run(context.Background(), w, args, nil)
		os.Stdout.WriteString("survived\n")
		os.Exit(0)
	}
	b, err := json.Marshal(instrument.WithFaults(samplejobs.SendEmail{To: "a@example.com"}, instrument.Faults{Crash: true}))
	require.NoError(t, err)
	require.Equal(t, `{"to":"a@example.com","subject":"","crash":true}`, string(b))
	require.True(t, instrument.FaultsOf(b).Crash)

	cmd := exec.Command(os.Args[0], "-test.run", "^TestFaultsCrashKillsTheProcess$")
	cmd.Env = append(os.Environ(), "INSTRUMENT_CRASH_CHILD=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "output: %s", out)
	require.Equal(t, 137, exit.ExitCode())
	require.Contains(t, string(out), "crash fault")
	require.NotContains(t, string(out), "worker ran")
	require.NotContains(t, string(out), "survived")
}
