package devapp_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/internal/devapp"
	"github.com/jobkit-go/jobkit/jobs/inspect"
)

func census(enqueued int) *devapp.Census {
	c := &devapp.Census{Queues: []devapp.QueueCensus{{Name: "Email", Counts: devapp.Counts{Enqueued: enqueued}}}}
	c.Total.Enqueued = enqueued
	return c
}

// On a terminal the table is redrawn in place: each update moves back over the previous one.
func TestTableDisplayRedraws(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	d := devapp.NewTableDisplay(&b, "jobkit dev")
	d.Update(census(1), time.Second)
	first := b.String()
	require.NotRegexp(t, `\x1b\[\d+A`, first, "nothing to move back over yet")
	lines := strings.Count(first, "\n")
	require.Equal(t, 4, lines, "title, header, one queue, total")
	require.Contains(t, first, "jobkit dev — 1s")

	b.Reset()
	d.Update(census(2), 2*time.Second)
	second := b.String()
	require.True(t, strings.HasPrefix(second, "\x1b[4A"), "%q", second)
	require.Equal(t, lines, strings.Count(second, "\x1b[2K"), "every line cleared before it is drawn")

	// A note is printed below the table, which is then drawn again below it.
	b.Reset()
	d.Note("hello")
	d.Update(census(3), 3*time.Second)
	require.True(t, strings.HasPrefix(b.String(), "hello\n\x1b[2K"), "%q", b.String())
}

// The name column fits the longest queue name: a lane's rows line up with the others.
func TestTableFitsLongQueueNames(t *testing.T) {
	t.Parallel()
	c := &devapp.Census{Queues: []devapp.QueueCensus{
		{Name: "Email", Counts: devapp.Counts{Enqueued: 144}},
		{Name: "NotifyCritical", Counts: devapp.Counts{Enqueued: 5}},
	}}
	c.Total.Enqueued = 149
	lines := strings.Split(strings.TrimRight(devapp.FormatTable(c), "\n"), "\n")
	require.Len(t, lines, 4)
	for _, l := range lines[1:] {
		require.Equal(t, len(lines[0]), len(l), "%q lines up with the header %q", l, lines[0])
	}
	require.True(t, strings.HasPrefix(lines[2], "NotifyCritical "), "%q", lines[2])
}

// Elsewhere a plain line per update, at most one per interval.
func TestLineDisplay(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	d := devapp.NewLineDisplay(&b, 3*time.Second)
	d.Update(census(1), time.Second)
	d.Update(census(2), 2*time.Second)
	d.Update(census(3), 4*time.Second)
	d.Note("done")
	require.Equal(t, []string{
		"dev    1s  enqueued/running/succeeded/retried/dead  Email 1/0/0/0/0  | total 1/0/0/0/0",
		"dev    4s  enqueued/running/succeeded/retried/dead  Email 3/0/0/0/0  | total 3/0/0/0/0",
		"done",
	}, strings.Split(strings.TrimSpace(b.String()), "\n"))
	require.NotContains(t, b.String(), "\x1b")
}

func TestDeadReasons(t *testing.T) {
	t.Parallel()
	c := &devapp.Census{}
	require.Empty(t, devapp.DeadReasons(c))
	for _, r := range []string{"cancelled", "attempts_exhausted", "cancelled", ""} {
		c.DeadJobs = append(c.DeadJobs, deadJob(r))
	}
	require.Equal(t, []string{"attempts_exhausted=1", "cancelled=2", "redrive_policy=1"}, devapp.DeadReasons(c))
}

func deadJob(reason string) inspect.DeadJob { return inspect.DeadJob{Reason: reason} }
