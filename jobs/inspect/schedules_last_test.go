package inspect_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// The last fire time at or before now, as the next fire times count them: a cron expression in its
// time zone, a rate from its start, a one-time schedule once its time has passed.
func TestLastFireTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC) // a Saturday
	start := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		expr, tz string
		start    time.Time
		want     string // "" for none
	}{
		{"cron(0 8 * * ? *)", "Europe/Paris", time.Time{}, "2026-11-28T07:00:00Z"}, // 08:00 in Paris is 07:00 UTC
		{"cron(*/5 * * * ? *)", "", time.Time{}, "2026-11-28T09:30:00Z"},           // a tick at now counts
		{"cron(0 9 ? * MON-FRI *)", "", time.Time{}, "2026-11-27T09:00:00Z"},       // Friday's
		{"cron(0 0 1 1 ? *)", "", time.Time{}, "2026-01-01T00:00:00Z"},             // nearly a year back
		{"rate(1 hour)", "", start, "2026-11-28T09:00:00Z"},
		{"rate(1 hour)", "", time.Time{}, ""},        // no start: no tick known
		{"rate(1 hour)", "", now.Add(time.Hour), ""}, // not started yet
		{"at(2026-11-28T09:00:00)", "", time.Time{}, "2026-11-28T09:00:00Z"},
		{"at(2026-11-29T09:00:00)", "", time.Time{}, ""},
		{"cron(bad)", "", time.Time{}, ""},
	} {
		got, ok := inspect.LastFireTime(c.expr, c.tz, c.start, now)
		if c.want == "" {
			assert.False(t, ok, "%s: %v", c.expr, got)
			continue
		}
		if assert.True(t, ok, c.expr) {
			assert.Equal(t, c.want, got.Format(time.RFC3339), c.expr)
		}
	}
}
