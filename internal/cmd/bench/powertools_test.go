package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
)

func TestCompareEventsAreTheSameEveryRun(t *testing.T) {
	t.Parallel()
	a, err := json.Marshal(compareEvents())
	require.NoError(t, err)
	b, err := json.Marshal(compareEvents())
	require.NoError(t, err)
	require.Equal(t, a, b, "the records must be generated identically for both sides and every run")

	evs := compareEvents()
	require.Len(t, evs, compareRecords/compareBatch)
	ids := map[string]bool{}
	for _, ev := range evs {
		require.Len(t, ev.Records, compareBatch)
		for _, r := range ev.Records {
			sum := md5.Sum([]byte(r.Body))
			require.Equal(t, hex.EncodeToString(sum[:]), r.Md5OfBody)
			require.NotNil(t, r.MessageAttributes)
			ids[r.MessageId] = true
		}
	}
	require.Len(t, ids, compareRecords, "message ids must be distinct")
}

// corrupt returns evs with one record's args no longer matching the typed args (user_id a string).
func corrupt(t *testing.T, evs []events.SQSEvent) []events.SQSEvent {
	t.Helper()
	raw, err := json.Marshal(evs)
	require.NoError(t, err)
	var out []events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &out))
	r := &out[len(out)-1].Records[3]
	body := strings.Replace(r.Body, `"user_id":`, `"user_id":"x`, 1)
	body = strings.Replace(body, `,"email"`, `","email"`, 1)
	require.NotEqual(t, r.Body, body)
	require.True(t, json.Valid([]byte(body)), body)
	r.Body = body
	return out
}

func TestRuntimeSideFailsOnARecordThatDoesNotDecode(t *testing.T) {
	t.Parallel()
	evs := compareEvents()[:20]
	pass, err := runtimePass(context.Background(), corrupt(t, evs))
	require.NoError(t, err)
	require.ErrorContains(t, pass(), "SQS calls", "a job that did not run must fail the measurement")
	require.Error(t, floorPass(corrupt(t, evs))())
}

func TestPowertoolsPeerRunsTheRecordsAndFailsOnABadOne(t *testing.T) {
	t.Parallel()
	root, err := repoRoot()
	require.NoError(t, err)
	python, err := peerPython(root)
	if err != nil {
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" { // make test installs the venv: no silent skip
			t.Fatalf("no Python venv with the Powertools peer's packages (make setup): %v", err)
		}
		t.Skipf("no Python venv with the Powertools peer's packages: %v", err)
	}
	dir := t.TempDir()
	evs := compareEvents()[:20]
	write := func(name string, evs []events.SQSEvent) string {
		raw, err := json.Marshal(evs)
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, raw, 0o644))
		return path
	}
	bench := filepath.Join(peerDir(root), "bench.py")

	peer, err := startPeer(context.Background(), python, bench, write("good.json", evs))
	require.NoError(t, err)
	for range 2 {
		f, err := peer.passFigures()
		require.NoError(t, err)
		require.Len(t, f, 2, "wall and CPU ns per message")
		require.Greater(t, f[0], 0.0)
	}
	peer.stop()

	_, err = startPeer(context.Background(), python, bench, write("bad.json", corrupt(t, evs)))
	require.ErrorContains(t, err, "did not start", "the peer must fail when a record does not parse into the model")

	// invocation.py reads one payload a line and reports CPU time alone.
	var payloads []byte
	for _, ev := range evs {
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		payloads = append(append(payloads, raw...), '\n')
	}
	path := filepath.Join(dir, "payloads.jsonl")
	require.NoError(t, os.WriteFile(path, payloads, 0o644))
	peer, err = startPeer(context.Background(), python, filepath.Join(peerDir(root), "invocation.py"), path)
	require.NoError(t, err)
	f, err := peer.passFigures()
	require.NoError(t, err)
	require.Len(t, f, 1, "CPU ns per message")
	require.Greater(t, f[0], 0.0)
	peer.stop()
}

// alternate runs the sides in turn, the first one alternating, and emitRatio prints the median
// of the pairs' ratios with their spread.
func TestAlternatePairs(t *testing.T) {
	t.Parallel()
	var order []string
	n := 0.0
	as, bs, err := alternate(5, func(int) (float64, error) {
		order = append(order, "a")
		n++
		return 2 * n, nil
	}, func(int) (float64, error) {
		order = append(order, "b")
		n++
		return n, nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "b", "a", "a", "b", "b", "a", "a", "b"}, order)
	require.Len(t, as, 5)
	require.Len(t, bs, 5)
	got := map[string]any{}
	emitRatio(func(k string, v any) { got[k] = v }, "r", []float64{1, 4, 3, 10, 2}, []float64{1, 2, 1, 2, 1})
	require.Equal(t, 2.0, got["r"], "median of 1, 2, 3, 5, 2")
	require.Equal(t, "1–5", got["r_spread"])
}

func TestMedian(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	require.Equal(t, 0.0, median(nil))
}
