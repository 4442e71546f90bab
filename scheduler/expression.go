package scheduler

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ExpressionKind is the type of a schedule expression.
type ExpressionKind int

// The three kinds of EventBridge Scheduler expression.
const (
	KindCron ExpressionKind = iota + 1 // cron(minutes hours day-of-month month day-of-week year)
	KindRate                           // rate(value unit)
	KindAt                             // at(yyyy-mm-ddThh:mm:ss), a one-time schedule
)

// String returns "cron", "rate" or "at".
func (k ExpressionKind) String() string {
	switch k {
	case KindCron:
		return "cron"
	case KindRate:
		return "rate"
	case KindAt:
		return "at"
	}
	return "invalid"
}

// AtLayout is the time layout inside at(...): a wall-clock time in the schedule's time zone.
const AtLayout = "2006-01-02T15:04:05"

// Expression is a parsed EventBridge Scheduler schedule expression. The zero value is invalid;
// get one from ParseExpression.
//
// Next-fire times follow EventBridge Scheduler's documented rules:
//   - cron and at are wall-clock times in the schedule's time zone. A cron tick whose local time
//     does not exist (the hour skipped when clocks go forward, e.g. 02:30 on the spring-forward day
//     in America/New_York) is skipped. A cron tick whose local time happens twice (the hour
//     repeated when clocks go back) fires once, at its first occurrence (the daylight-saving
//     offset, e.g. 01:30 EDT, not 01:30 EST).
//   - rate is a fixed duration between ticks, whatever the clocks do: rate(1 day) is 24 hours,
//     including over a 23- or 25-hour local day.
//   - at(...) in a time zone fires once. A local time that falls in a spring-forward gap does not
//     exist; Schedule.Validate rejects it, and Next reads it with the offset in force before the gap
//     (02:30 EST is 03:30 EDT) so that a one-time job is never lost.
type Expression struct {
	kind ExpressionKind
	text string
	cron *cronSpec
	rate time.Duration
	at   civil
}

// civil is a wall-clock time without a zone.
type civil struct {
	year                      int
	month                     time.Month
	day, hour, minute, second int
}

// ParseExpression parses and validates a cron(...), rate(...) or at(...) expression with
// EventBridge Scheduler's syntax. The error is an *ExpressionError.
func ParseExpression(s string) (Expression, error) {
	fail := func(reason string) (Expression, error) {
		return Expression{}, &ExpressionError{Expression: s, Reason: reason}
	}
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return fail("want cron(...), rate(...) or at(...)")
	}
	head, body := s[:open], s[open+1:len(s)-1]
	switch head {
	case "cron":
		spec, err := parseCron(s, body)
		if err != nil {
			return Expression{}, err
		}
		return Expression{kind: KindCron, text: s, cron: spec}, nil
	case "rate":
		d, err := parseRate(s, body)
		if err != nil {
			return Expression{}, err
		}
		return Expression{kind: KindRate, text: s, rate: d}, nil
	case "at":
		t, err := time.Parse(AtLayout, body)
		if err != nil || strings.TrimSpace(body) != body {
			return fail("at() wants a local date and time as yyyy-mm-ddThh:mm:ss, e.g. at(2026-11-21T09:30:00)")
		}
		return Expression{kind: KindAt, text: s, at: civil{t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second()}}, nil
	}
	return fail("unknown expression type " + strconv.Quote(head) + "; want cron, rate or at")
}

// MustParseExpression is ParseExpression for expressions known to be valid; it panics on error.
func MustParseExpression(s string) Expression {
	e, err := ParseExpression(s)
	if err != nil {
		panic(err)
	}
	return e
}

// Kind returns the expression's type.
func (e Expression) Kind() ExpressionKind { return e.kind }

// String returns the expression as written.
func (e Expression) String() string { return e.text }

// Interval returns a rate expression's duration, and 0 for the other kinds.
func (e Expression) Interval() time.Duration { return e.rate }

// At returns the instant of an at(...) expression evaluated in loc (nil means UTC), and false for
// the other kinds.
func (e Expression) At(loc *time.Location) (time.Time, bool) {
	if e.kind != KindAt {
		return time.Time{}, false
	}
	if loc == nil {
		loc = time.UTC
	}
	if t, ok := resolveLocal(e.at, loc); ok {
		return t, true
	}
	// A gap: read the wall clock with the offset in force before it (02:30 EST is 03:30 EDT), so
	// the job is neither lost nor early.
	c := e.at
	naive := time.Date(c.year, c.month, c.day, c.hour, c.minute, c.second, 0, time.UTC).Unix()
	_, before := time.Unix(naive-86400, 0).In(loc).Zone()
	return time.Unix(naive-int64(before), 0).In(loc), true
}

// Next returns the first tick strictly after `after`, evaluated in loc (nil means UTC), and false
// when there is none (an at() in the past, a cron whose years are over).
//
// A rate expression has no fixed phase: its Next is after + the interval, i.e. `after` is taken to
// be the previous tick (EventBridge Scheduler counts a rate from the last invocation, or from the
// schedule's start, which is when it is created unless a start date is set).
func (e Expression) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	switch e.kind {
	case KindRate:
		return after.Add(e.rate), true
	case KindAt:
		t, _ := e.At(loc)
		return t, t.After(after)
	case KindCron:
		return e.cron.next(after, loc)
	}
	return time.Time{}, false
}

// parseRate parses the inside of rate(...).
func parseRate(expr, body string) (time.Duration, error) {
	fail := func(value, reason string) (time.Duration, error) {
		return 0, &ExpressionError{Expression: expr, Value: value, Reason: reason}
	}
	parts := strings.Fields(body)
	if len(parts) != 2 || strings.Join(parts, " ") != body {
		return fail(body, "rate() wants a value and a unit separated by one space, e.g. rate(5 minutes)")
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n <= 0 || parts[0][0] == '+' || parts[0][0] == '0' {
		return fail(parts[0], "the rate value must be a positive whole number")
	}
	var unit time.Duration
	singular := strings.TrimSuffix(parts[1], "s")
	switch singular {
	case "minute":
		unit = time.Minute
	case "hour":
		unit = time.Hour
	case "day":
		unit = 24 * time.Hour
	default:
		return fail(parts[1], "the rate unit must be minute(s), hour(s) or day(s)")
	}
	plural := strings.HasSuffix(parts[1], "s")
	if n == 1 && plural {
		return fail(parts[1], "a value of 1 takes the singular unit, e.g. rate(1 "+singular+")")
	}
	if n > 1 && !plural {
		return fail(parts[1], "a value above 1 takes the plural unit, e.g. rate("+parts[0]+" "+singular+"s)")
	}
	if int64(n) > math.MaxInt64/int64(unit) {
		return fail(parts[0], "the rate is too long")
	}
	return time.Duration(n) * unit, nil
}

// resolveLocal returns the earliest instant whose wall clock in loc is c, and false when c does not
// exist in loc (a spring-forward gap).
func resolveLocal(c civil, loc *time.Location) (time.Time, bool) {
	naive := time.Date(c.year, c.month, c.day, c.hour, c.minute, c.second, 0, time.UTC).Unix()
	var best int64
	found := false
	for _, probe := range [...]int64{naive - 86400, naive, naive + 86400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		u := naive - int64(off)
		got := time.Unix(u, 0).In(loc)
		if got.Year() == c.year && got.Month() == c.month && got.Day() == c.day &&
			got.Hour() == c.hour && got.Minute() == c.minute && got.Second() == c.second {
			if !found || u < best {
				best, found = u, true
			}
		}
	}
	if !found {
		return time.Time{}, false
	}
	return time.Unix(best, 0).In(loc), true
}
