package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
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
	_, err := timeRuntime(context.Background(), corrupt(t, evs))
	require.ErrorContains(t, err, "SQS calls", "a job that did not run must fail the measurement")
	_, err = timeDecodeFloor(corrupt(t, evs))
	require.Error(t, err)
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

	out, err := exec.Command(python, bench, write("good.json", evs), "2").Output()
	require.NoError(t, err)
	var res struct {
		Records  int       `json:"records"`
		NsPerMsg []float64 `json:"ns_per_msg"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	require.Equal(t, 200, res.Records)
	require.Len(t, res.NsPerMsg, 2)

	out, err = exec.Command(python, bench, write("bad.json", corrupt(t, evs)), "1").CombinedOutput()
	require.Error(t, err, "the peer must fail when a record does not parse into the model: %s", out)
	require.Contains(t, string(out), "1 of 200 records failed")
}

func TestMedian(t *testing.T) {
	t.Parallel()
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	require.Equal(t, 0.0, median(nil))
}
