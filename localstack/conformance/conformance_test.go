package conformance_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/localstack/conformance"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The suite against the endpoint the tests run on (moto under `make test`), each check a subtest:
// a check fails the test unless it passes or is a listed known difference of that emulator, and a
// listed difference the emulator no longer shows fails it too (the list is then stale).
func TestSuiteOnEmulator(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	emulator := emulatorName(t)
	t.Logf("emulator %s at %s", emulator, awstest.Endpoint())
	for _, c := range conformance.Checks() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			err := conformance.RunCheck(context.Background(), cfg, c)
			switch conformance.Judge(emulator, c.Name, err) {
			case conformance.Passed:
			case conformance.KnownDifference:
				t.Logf("known difference of %s: %v (contradicts %s)", emulator, err, conformance.FindDifference(emulator, c.Name).Doc)
			case conformance.Stale:
				t.Errorf("%s is listed as a known difference of %s but behaves as %s documents: remove it from KnownDifferences and docs/emulators.md",
					c.Name, emulator, c.Doc)
			default:
				t.Errorf("%v (AWS documents otherwise: %s)", err, c.Doc)
			}
		})
	}
}

// emulatorName says which emulator answers: JOBKIT_CONFORMANCE_EMULATOR, "aws" for real AWS,
// "localstack" when the endpoint has LocalStack's health document, else "moto".
func emulatorName(t *testing.T) string {
	if e := os.Getenv("JOBKIT_CONFORMANCE_EMULATOR"); e != "" {
		return e
	}
	ep := awstest.Endpoint()
	if ep == "" {
		return "aws"
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(strings.TrimRight(ep, "/") + "/_localstack/health")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return "localstack"
		}
	}
	return "moto"
}

func TestJudge(t *testing.T) {
	t.Parallel()
	d := conformance.KnownDifferences[0]
	boom := errors.New("boom")
	require.Equal(t, conformance.Passed, conformance.Judge("aws", d.Check, nil))
	require.Equal(t, conformance.Failed, conformance.Judge("aws", d.Check, boom))
	require.Equal(t, conformance.KnownDifference, conformance.Judge(d.Emulator, d.Check, boom))
	require.Equal(t, conformance.Stale, conformance.Judge(d.Emulator, d.Check, nil))

	r := conformance.Report{Emulator: "x", Results: []conformance.Result{
		{Check: "a", Outcome: conformance.Passed},
		{Check: "b", Outcome: conformance.KnownDifference, Err: boom, Known: &d},
		{Check: "c", Outcome: conformance.Stale, Known: &d},
		{Check: "d", Outcome: conformance.Failed, Err: boom},
	}}
	require.Equal(t, "CONFORMANCE emulator=x passed=1 failed=2 known_differences=1", r.Summary())
	require.Len(t, r.Lines(), 3)
}

// Every known difference names a check of the suite, once, with AWS documentation.
func TestKnownDifferencesNameChecks(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range conformance.Checks() {
		require.NotContains(t, names, c.Name, "duplicate check name")
		names = append(names, c.Name)
		require.True(t, strings.HasPrefix(c.Doc, "https://docs.aws.amazon.com/"), "%s: %s", c.Name, c.Doc)
	}
	seen := map[string]bool{}
	for _, d := range conformance.KnownDifferences {
		require.Contains(t, names, d.Check)
		require.Contains(t, []string{"moto", "localstack", "elasticmq", "dynamodb-local"}, d.Emulator)
		require.True(t, strings.HasPrefix(d.Doc, "https://docs.aws.amazon.com/"), "%s %s: %s", d.Emulator, d.Check, d.Doc)
		require.NotEmpty(t, d.Reason)
		key := d.Emulator + " " + d.Check
		require.False(t, seen[key], "listed twice: %s", key)
		seen[key] = true
	}
}

// docs/emulators.md's table of known differences is KnownDifferences, row for row.
func TestDocsListKnownDifferences(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../../docs/emulators.md")
	require.NoError(t, err)
	defer f.Close()
	var got []conformance.Difference
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = line == "## Known differences"
			continue
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| emulator ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		require.Len(t, cells, 4, "row %q", line)
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`<>")
		}
		got = append(got, conformance.Difference{Emulator: cells[0], Check: cells[1], Reason: cells[2], Doc: cells[3]})
	}
	require.NoError(t, sc.Err())
	require.Equal(t, conformance.KnownDifferences, got, "docs/emulators.md's known differences and conformance.KnownDifferences differ")
	require.True(t, slices.IsSorted(conformance.Emulators()))
}
