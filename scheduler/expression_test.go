package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// ticks returns the first n ticks after `after`.
func ticks(t *testing.T, expr string, loc *time.Location, after time.Time, n int) []string {
	t.Helper()
	e, err := ParseExpression(expr)
	require.NoError(t, err)
	var out []string
	for i := 0; i < n; i++ {
		next, ok := e.Next(after, loc)
		if !ok {
			out = append(out, "none")
			break
		}
		out = append(out, next.UTC().Format(time.RFC3339))
		after = next
	}
	return out
}

// The known tables below were written from a calendar, not from this code: 2026-03-08 and
// 2026-11-01 are the US daylight-saving changes (02:00 EST -> 03:00 EDT, 02:00 EDT -> 01:00 EST),
// 2026-03-29 and 2026-10-25 the EU ones (02:00 CET -> 03:00 CEST, 03:00 CEST -> 02:00 CET).
func TestNextKnownTables(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	cases := []struct {
		name  string
		expr  string
		loc   *time.Location
		after string
		want  []string
	}{
		{"daily UTC", "cron(0 10 * * ? *)", time.UTC, "2026-11-21T10:00:00Z",
			[]string{"2026-11-22T10:00:00Z", "2026-11-23T10:00:00Z"}},
		{"NY 02:30 is skipped on spring-forward day", "cron(30 2 * * ? *)", ny, "2026-03-06T12:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"NY 01:30 fires once on fall-back day, at EDT", "cron(30 1 * * ? *)", ny, "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"NY hourly over spring-forward", "cron(0 * * * ? *)", ny, "2026-03-08T05:30:00Z",
			[]string{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}},
		{"NY hourly over fall-back: the repeated 01:00 runs once", "cron(0 * * * ? *)", ny, "2026-11-01T04:30:00Z",
			[]string{"2026-11-01T05:00:00Z", "2026-11-01T07:00:00Z", "2026-11-01T08:00:00Z"}},
		{"NY after the first 01:30 while the second one is pending", "cron(30 1 * * ? *)", ny, "2026-11-01T06:10:00Z",
			[]string{"2026-11-02T06:30:00Z"}},
		{"Berlin 02:30 skipped on spring-forward day", "cron(30 2 * * ? *)", berlin, "2026-03-28T12:00:00Z",
			[]string{"2026-03-30T00:30:00Z"}},
		{"Berlin 02:30 once on fall-back day, at CEST", "cron(30 2 * * ? *)", berlin, "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"Berlin weekdays 09:00 over the change", "cron(0 9 ? * MON-FRI *)", berlin, "2026-03-27T12:00:00Z",
			[]string{"2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z"}},
		{"rate(1 day) is 24 hours over a 23-hour day", "rate(1 day)", ny, "2026-03-07T17:00:00Z",
			[]string{"2026-03-08T17:00:00Z", "2026-03-09T17:00:00Z"}},
		{"rate(5 minutes)", "rate(5 minutes)", time.UTC, "2026-11-21T10:02:00Z",
			[]string{"2026-11-21T10:07:00Z", "2026-11-21T10:12:00Z"}},
		{"last day of month", "cron(0 12 L * ? *)", time.UTC, "2026-01-15T00:00:00Z",
			[]string{"2026-01-31T12:00:00Z", "2026-02-28T12:00:00Z", "2026-03-31T12:00:00Z", "2026-04-30T12:00:00Z"}},
		{"last day of February in a leap year", "cron(0 12 L 2 ? *)", time.UTC, "2027-03-01T00:00:00Z",
			[]string{"2028-02-29T12:00:00Z", "2029-02-28T12:00:00Z"}},
		{"the 31st skips short months", "cron(0 0 31 * ? *)", time.UTC, "2026-01-31T00:00:00Z",
			[]string{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"29 February only in leap years", "cron(0 0 29 2 ? *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"15W: Sunday 15th moves to Monday, Saturday 15th to Friday", "cron(0 9 15W * ? 2026)", time.UTC, "2026-02-01T00:00:00Z",
			[]string{"2026-02-16T09:00:00Z", "2026-03-16T09:00:00Z", "2026-04-15T09:00:00Z"}},
		{"15W in August 2026 (Saturday)", "cron(0 9 15W 8 ? 2026)", time.UTC, "2026-08-01T00:00:00Z",
			[]string{"2026-08-14T09:00:00Z", "none"}},
		{"1W on a Saturday stays in the month", "cron(0 9 1W 8 ? 2026)", time.UTC, "2026-07-01T00:00:00Z",
			[]string{"2026-08-03T09:00:00Z", "none"}},
		{"31W on the last day, a Sunday, stays in the month", "cron(0 9 31W 5 ? 2026)", time.UTC, "2026-05-01T00:00:00Z",
			[]string{"2026-05-29T09:00:00Z", "none"}},
		{"LW: last weekday", "cron(0 17 LW * ? *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T17:00:00Z", "2026-02-27T17:00:00Z", "2026-03-31T17:00:00Z", "2026-04-30T17:00:00Z", "2026-05-29T17:00:00Z"}},
		{"6L: last Friday", "cron(0 18 ? * 6L *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T18:00:00Z", "2026-02-27T18:00:00Z", "2026-03-27T18:00:00Z"}},
		{"L in day-of-week: Saturdays", "cron(0 0 ? * L *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z"}},
		{"2#1: first Monday", "cron(0 10 ? * 2#1 *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-05T10:00:00Z", "2026-02-02T10:00:00Z", "2026-03-02T10:00:00Z"}},
		{"MON#1 by name", "cron(0 10 ? * MON#1 *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-05T10:00:00Z", "2026-02-02T10:00:00Z"}},
		{"6#5: fifth Friday only in months that have one", "cron(0 10 ? * 6#5 *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-30T10:00:00Z", "2026-05-29T10:00:00Z", "2026-07-31T10:00:00Z"}},
		{"1-7 numbering: 1 is Sunday", "cron(0 8 ? * 1 *)", time.UTC, "2026-02-28T00:00:00Z",
			[]string{"2026-03-01T08:00:00Z", "2026-03-08T08:00:00Z"}},
		{"names and lists", "cron(15 8 ? JAN,MAR SUN,SAT *)", time.UTC, "2026-01-30T00:00:00Z",
			[]string{"2026-01-31T08:15:00Z", "2026-03-01T08:15:00Z"}},
		{"lower-case names", "cron(0 8 ? jan mon *)", time.UTC, "2026-01-01T00:00:00Z",
			[]string{"2026-01-05T08:00:00Z"}},
		{"1/10 minutes", "cron(1/10 9 * * ? *)", time.UTC, "2026-11-21T09:30:00Z",
			[]string{"2026-11-21T09:31:00Z", "2026-11-21T09:41:00Z", "2026-11-21T09:51:00Z", "2026-11-22T09:01:00Z"}},
		{"*/6 hours", "cron(0 */6 * * ? *)", time.UTC, "2026-11-21T07:00:00Z",
			[]string{"2026-11-21T12:00:00Z", "2026-11-21T18:00:00Z", "2026-11-22T00:00:00Z"}},
		{"range with increment", "cron(0 9-17/4 * * ? *)", time.UTC, "2026-11-21T09:00:00Z",
			[]string{"2026-11-21T13:00:00Z", "2026-11-21T17:00:00Z", "2026-11-22T09:00:00Z"}},
		{"years run out", "cron(0 0 1 1 ? 2027-2028)", time.UTC, "2026-06-01T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "none"}},
		{"seconds of `after` do not count", "cron(* * * * ? *)", time.UTC, "2026-11-21T09:00:30Z",
			[]string{"2026-11-21T09:01:00Z", "2026-11-21T09:02:00Z"}},
		{"at in a time zone", "at(2026-11-24T09:30:00)", berlin, "2026-11-21T00:00:00Z",
			[]string{"2026-11-24T08:30:00Z", "none"}},
		{"at already past", "at(2026-11-24T09:30:00)", time.UTC, "2026-11-24T09:30:00Z",
			[]string{"none"}},
		{"at on the fall-back hour: first occurrence", "at(2026-11-01T01:30:00)", ny, "2026-10-01T00:00:00Z",
			[]string{"2026-11-01T05:30:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ticks(t, tc.expr, tc.loc, utc(tc.after), len(tc.want))
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseExpressionErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr   string
		field  string
		reason string // a substring of the reason
	}{
		{"cron(0 9 * * *)", "", "6 fields"},
		{"cron(0 9 * * ? * *)", "", "6 fields"},
		{"cron(0 9 * * * *)", "day-of-week", "must be ?"},
		{"cron(0 9 1 * MON *)", "day-of-week", "must be ?"},
		{"cron(0 9 ? * ? *)", "day-of-month", "cannot both be ?"},
		{"cron(60 9 * * ? *)", "minutes", "out of range 0-59"},
		{"cron(0 24 * * ? *)", "hours", "out of range 0-23"},
		{"cron(0 9 32 * ? *)", "day-of-month", "out of range 1-31"},
		{"cron(0 9 0 * ? *)", "day-of-month", "out of range 1-31"},
		{"cron(0 9 * 13 ? *)", "month", "out of range 1-12"},
		{"cron(0 9 * FOO ? *)", "month", "not a number or a name (JAN-DEC)"},
		{"cron(0 9 ? * 0 *)", "day-of-week", "out of range 1-7"},
		{"cron(0 9 ? * 8 *)", "day-of-week", "out of range 1-7"},
		{"cron(0 9 * * ? 1969)", "year", "out of range 1970-2199"},
		{"cron(0 9 * * ? 2200)", "year", "out of range 1970-2199"},
		{"cron(0 9 ? * 2#1,6#3 *)", "day-of-week", "single # expression"},
		{"cron(0 9 ? * 2#6 *)", "day-of-week", "1-5"},
		{"cron(0 9 ? * MON/2 *)", "day-of-week", "/ is not allowed"},
		{"cron(0 9 ? * 6L,2 *)", "day-of-week", "stand alone"},
		{"cron(0 9 ? * 5-2 *)", "day-of-week", "start is after its end"},
		{"cron(0 9 L-3 * ? *)", "day-of-month", "L-n"},
		{"cron(0 9 1,L * ? *)", "day-of-month", "stand alone"},
		{"cron(0 9 1-5W * ? *)", "day-of-month", "stand alone"},
		{"cron(0 9 32W * ? *)", "day-of-month", "out of range 1-31"},
		{"cron(0 9 1#2 * ? *)", "day-of-month", "only allowed in day-of-week"},
		{"cron(0 L * * ? *)", "hours", "only the wildcards"},
		{"cron(0 9 * JUL#1 ? *)", "month", "only the wildcards"},
		{"cron(*/0 9 * * ? *)", "minutes", "positive whole number"},
		{"cron(0 9,,10 * * ? *)", "hours", "empty list item"},
		{"cron(0 9 30 2 ? *)", "", "never fires"},
		{"cron(0 9 31 4,6,9,11 ? *)", "", "never fires"},
		{"rate(1 minutes)", "", "singular"},
		{"rate(5 minute)", "", "plural"},
		{"rate(0 minutes)", "", "positive whole number"},
		{"rate(-1 minutes)", "", "positive whole number"},
		{"rate(1.5 hours)", "", "positive whole number"},
		{"rate(5 seconds)", "", "minute(s), hour(s) or day(s)"},
		{"rate(5minutes)", "", "value and a unit"},
		{"rate(5  minutes)", "", "value and a unit"},
		{"at(2026-13-01T00:00:00)", "", "yyyy-mm-ddThh:mm:ss"},
		{"at(2026-11-21 09:00:00)", "", "yyyy-mm-ddThh:mm:ss"},
		{"at(2026-11-21T09:00)", "", "yyyy-mm-ddThh:mm:ss"},
		{"at(2026-11-21T09:00:00Z)", "", "yyyy-mm-ddThh:mm:ss"},
		{"every day", "", "want cron(...)"},
		{"CRON(0 9 * * ? *)", "", "unknown expression type"},
		{"", "", "want cron(...)"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExpression(tc.expr)
			require.Error(t, err)
			var ee *ExpressionError
			require.True(t, errors.As(err, &ee), "want *ExpressionError, got %T", err)
			assert.Equal(t, tc.expr, ee.Expression)
			assert.Equal(t, tc.field, ee.Field, "field")
			assert.Contains(t, ee.Reason, tc.reason)
			assert.True(t, strings.HasPrefix(err.Error(), "scheduler: invalid expression"), err.Error())
		})
	}
}

func TestParseExpressionKinds(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string]ExpressionKind{
		"cron(0 9 ? * MON-FRI *)": KindCron,
		"rate(1 minute)":          KindRate,
		"rate(2 hours)":           KindRate,
		"at(2026-11-21T09:00:00)": KindAt,
	} {
		e, err := ParseExpression(expr)
		require.NoError(t, err, expr)
		assert.Equal(t, want, e.Kind(), expr)
		assert.Equal(t, expr, e.String())
	}
	assert.Equal(t, 2*time.Hour, MustParseExpression("rate(2 hours)").Interval())
	assert.Equal(t, 3*24*time.Hour, MustParseExpression("rate(3 days)").Interval())
	assert.Equal(t, time.Minute, MustParseExpression("rate(1 minute)").Interval())
	assert.Panics(t, func() { MustParseExpression("rate(1 minutes)") })
}

func TestResolveLocal(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	_, ok := resolveLocal(civil{2026, time.March, 8, 2, 30, 0}, ny)
	assert.False(t, ok, "02:30 does not exist on 2026-03-08 in New York")
	got, ok := resolveLocal(civil{2026, time.November, 1, 1, 30, 0}, ny)
	require.True(t, ok)
	assert.Equal(t, "2026-11-01T05:30:00Z", got.UTC().Format(time.RFC3339), "the earlier (EDT) of the two 01:30s")
	// Lord Howe Island moves its clocks by 30 minutes.
	lh := mustLoad(t, "Australia/Lord_Howe")
	_, ok = resolveLocal(civil{2026, time.October, 4, 2, 15, 0}, lh)
	assert.False(t, ok, "02:15 falls in Lord Howe's half-hour gap")
}

func TestAtInGapIsNotLost(t *testing.T) {
	t.Parallel()
	ny := mustLoad(t, "America/New_York")
	e := MustParseExpression("at(2026-03-08T02:30:00)")
	got, ok := e.Next(utc("2026-03-01T00:00:00Z"), ny)
	require.True(t, ok)
	assert.Equal(t, "2026-03-08T07:30:00Z", got.UTC().Format(time.RFC3339), "03:30 EDT: the offset before the gap")
}

func FuzzParseExpression(f *testing.F) {
	for _, s := range []string{"cron(0 9 ? * MON-FRI *)", "cron(0/5 1-3 L * ? 2026)", "cron(0 0 ? * 6#3 *)", "rate(5 minutes)", "at(2026-11-21T09:00:00)", "cron(0 0 15W * ? *)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExpression(s)
		if err != nil {
			var ee *ExpressionError
			if !errors.As(err, &ee) {
				t.Fatalf("error %T is not an *ExpressionError", err)
			}
			return
		}
		after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if next, ok := e.Next(after, time.UTC); ok && !next.After(after) {
			t.Fatalf("%s: next %s is not after %s", s, next, after)
		}
	})
}

func BenchmarkNext(b *testing.B) {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	for _, expr := range []string{"cron(0 9 ? * MON-FRI *)", "cron(0 18 ? * 6L *)", "cron(*/5 * * * ? *)", "cron(0 0 29 2 ? *)"} {
		e := MustParseExpression(expr)
		b.Run(expr, func(b *testing.B) {
			after := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := 0; i < b.N; i++ {
				if _, ok := e.Next(after, loc); !ok {
					b.Fatal("no tick")
				}
			}
		})
	}
}
