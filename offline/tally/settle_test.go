package tally_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/tally"
)

func ids(jobs []tally.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestSettle(t *testing.T) {
	t.Parallel()
	deleted := tally.Job{ID: "ok", Queue: "Q", Phase: tally.Deleted, DeletedAfterRun: true}
	redriven := tally.Job{ID: "again", Queue: "Q", Phase: tally.DeadLettered, Messages: 2}
	retrying := tally.Job{ID: "retry", Queue: "Q", Phase: tally.Retrying, Attempt: 2}
	unseen := tally.Job{ID: "unseen", Queue: "Q"}
	cases := map[string]struct {
		jobs            []tally.Job
		end             tally.End
		succeeded, dead int
		stranded, lost  []string
	}{
		"deleted after a run is a success when the run has no evidence of its own": {
			jobs: []tally.Job{deleted}, succeeded: 1,
		},
		"with evidence, a deletion without it is lost": {
			jobs: []tally.Job{deleted}, end: tally.End{Succeeded: map[string]bool{}}, lost: []string{"ok"},
		},
		"redriven and dead-lettered again, back in the DLQ: dead": {
			jobs: []tally.Job{redriven}, end: tally.End{InDLQ: map[string]bool{"again": true}}, dead: 1,
		},
		"in the DLQ, whatever its last known phase: dead": {
			jobs: []tally.Job{retrying}, end: tally.End{InDLQ: map[string]bool{"retry": true}}, dead: 1,
		},
		"dead-lettered, in a DLQ message the listing could not name: dead": {
			jobs: []tally.Job{redriven}, end: tally.End{UnknownDead: map[string]int{"Q": 1}}, dead: 1,
		},
		"dead-lettered and not in the DLQ: lost": {
			jobs: []tally.Job{redriven}, lost: []string{"again"},
		},
		"on its queue at the end: stranded": {
			jobs: []tally.Job{retrying, unseen}, end: tally.End{OnQueue: map[string]int{"Q": 2}}, stranded: []string{"retry", "unseen"},
		},
		"more jobs unaccounted than messages left: the ones last known off the queue are lost": {
			jobs:     []tally.Job{redriven, retrying},
			end:      tally.End{Succeeded: map[string]bool{}, OnQueue: map[string]int{"Q": 1}},
			stranded: []string{"retry"}, lost: []string{"again"},
		},
		"messages of another queue account for nothing here": {
			jobs: []tally.Job{retrying}, end: tally.End{OnQueue: map[string]int{"Other": 5}}, lost: []string{"retry"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tally.Settle(c.jobs, c.end)
			require.Equal(t, len(c.jobs), got.Jobs)
			require.Equal(t, c.succeeded, got.Succeeded, "succeeded")
			require.Equal(t, c.dead, got.Dead, "dead")
			require.Equal(t, c.stranded, ids(got.Stranded), "stranded")
			require.Equal(t, c.lost, ids(got.Lost), "lost")
		})
	}
}

// Lines names up to max jobs, then says how many more.
func TestLinesCaps(t *testing.T) {
	t.Parallel()
	var jobs []tally.Job
	for _, id := range []string{"a", "b", "c", "d"} {
		jobs = append(jobs, tally.Job{ID: id, Kind: "k", Queue: "Q", Phase: tally.Retrying, Attempt: 3, LastError: "boom\x1b[2J"})
	}
	require.Equal(t, []string{
		`a (k, Q): retrying, attempt 3, last error: boom\x1b[2J`,
		`b (k, Q): retrying, attempt 3, last error: boom\x1b[2J`,
		"and 2 more",
	}, tally.Lines(jobs, 2))
	require.Len(t, tally.Lines(jobs, 0), 4)
	require.Empty(t, tally.Lines(nil, 3))
}
