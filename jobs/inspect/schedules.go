package inspect

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/jobkit-go/jobkit/scheduler"
)

// ScheduleOptions tunes Schedules; nil means defaults.
type ScheduleOptions struct {
	// Group lists the schedules of one schedule group; "" lists every group's.
	Group string
	// Next is how many next fire times to compute per schedule; 0 means 3.
	Next int
	// Limit is the most schedules returned; 0 means 500.
	Limit int
}

// ScheduleInfo is an EventBridge Scheduler schedule as the console and the CLI show it: what fires,
// when, and where to. It carries no role ARN, input or other target detail beyond the target ARN.
type ScheduleInfo struct {
	Group string `json:"group"`
	Name  string `json:"name"` // the schedule's name in Scheduler (CloudFormation's, for a deployed one)
	// JobName and Kind are the job a jobkit schedule sends: the name its scheduler.Schedule
	// declares in Go, and the job's kind; empty for a schedule of another input.
	JobName    string `json:"job_name,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Expression string `json:"expression"`
	TimeZone   string `json:"time_zone,omitempty"` // the IANA zone the expression is read in; "" means UTC
	State      string `json:"state"`               // ENABLED or DISABLED
	TargetARN  string `json:"target_arn"`
	// Next are the next fire times (UTC); empty for a disabled schedule or one that fires no more.
	Next []time.Time `json:"next"`
	// Last is the latest fire time at or before now (UTC), whether or not the schedule was
	// enabled then; nil when it has not fired yet (as far as its expression and dates tell) or
	// that time is more than a year back. LastJobID is the job that tick sent
	// (scheduler.TickID), for a jobkit schedule: its status tells how the last run went.
	Last      *time.Time `json:"last,omitempty"`
	LastJobID string     `json:"last_job_id,omitempty"`
	// Problem says why Next could not be computed (an expression or time zone jobkit cannot read).
	Problem string `json:"problem,omitempty"`
}

// Schedules lists the schedules of the endpoint's EventBridge Scheduler (one ListSchedules
// pagination and one GetSchedule per schedule, 8 at a time) with their next fire times, sorted by
// group and name. Next fire times follow scheduler.Expression.Next; a rate schedule counts its
// ticks from its start date, or else its creation date, as EventBridge Scheduler does.
func (i *Inspector) Schedules(ctx context.Context, opts *ScheduleOptions) ([]ScheduleInfo, error) {
	var o ScheduleOptions
	if opts != nil {
		o = *opts
	}
	if o.Next <= 0 {
		o.Next = 3
	}
	if o.Limit <= 0 {
		o.Limit = 500
	}
	in := &awsscheduler.ListSchedulesInput{}
	if o.Group != "" {
		in.GroupName = aws.String(o.Group)
	}
	var out []ScheduleInfo
	p := awsscheduler.NewListSchedulesPaginator(i.sch, in)
	for p.HasMorePages() && len(out) < o.Limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("inspect: list schedules: %w", err)
		}
		for _, s := range page.Schedules {
			if len(out) == o.Limit {
				break
			}
			group := aws.ToString(s.GroupName)
			group = cmp.Or(group, "default")
			out = append(out, ScheduleInfo{Group: group, Name: aws.ToString(s.Name), State: string(s.State)})
			if s.Target != nil {
				out[len(out)-1].TargetARN = aws.ToString(s.Target.Arn)
			}
		}
	}
	errs := make([]error, len(out))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for n := range out {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[n] = i.scheduleDetail(ctx, &out[n], o.Next)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Group != out[b].Group {
			return out[a].Group < out[b].Group
		}
		return out[a].Name < out[b].Name
	})
	return out, nil
}

// scheduleDetail reads one schedule's expression and time zone and computes its next fire times.
func (i *Inspector) scheduleDetail(ctx context.Context, s *ScheduleInfo, next int) error {
	got, err := i.sch.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(s.Group), Name: aws.String(s.Name)})
	if err != nil {
		return fmt.Errorf("inspect: schedule %s/%s: %w", s.Group, s.Name, err)
	}
	s.Expression = aws.ToString(got.ScheduleExpression)
	s.TimeZone = aws.ToString(got.ScheduleExpressionTimezone)
	if got.State != "" {
		s.State = string(got.State)
	}
	if got.Target != nil {
		if s.TargetARN == "" {
			s.TargetARN = aws.ToString(got.Target.Arn)
		}
		s.JobName, s.Kind = tickJob(aws.ToString(got.Target.Input))
	}
	start := aws.ToTime(got.StartDate)
	if start.IsZero() {
		start = aws.ToTime(got.CreationDate)
	}
	s.Next, s.Problem = NextFireTimes(s.Expression, s.TimeZone, start, i.now(), next)
	if last, ok := LastFireTime(s.Expression, s.TimeZone, start, i.now()); ok && (start.IsZero() || !last.Before(start)) {
		s.Last = &last
		if s.JobName != "" {
			s.LastJobID = scheduler.TickID(s.JobName, last)
		}
	}
	if s.State == "DISABLED" {
		s.Next = nil
	}
	if end := aws.ToTime(got.EndDate); !end.IsZero() {
		for n, t := range s.Next {
			if t.After(end) {
				s.Next = s.Next[:n]
				break
			}
		}
	}
	return nil
}

// LastFireTime returns the latest fire time of a schedule expression at or before now, in UTC,
// looking back at most a year; ok is false when there is none (or the expression or time zone
// cannot be read). tz "" means UTC; start is when a rate schedule began counting (ticks fall at
// start + k × interval, as NextFireTimes counts them); zero means the expression alone decides
// (a rate: no tick known).
func LastFireTime(expression, tz string, start, now time.Time) (time.Time, bool) {
	expr, err := scheduler.ParseExpression(expression)
	if err != nil {
		return time.Time{}, false
	}
	loc := time.UTC
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return time.Time{}, false
		}
	}
	switch expr.Kind() {
	case scheduler.KindRate:
		iv := expr.Interval()
		if start.IsZero() || iv <= 0 || start.After(now) {
			return time.Time{}, false
		}
		return start.Add(now.Sub(start) / iv * iv).UTC(), true
	case scheduler.KindAt:
		at, ok := expr.At(loc)
		if !ok || at.After(now) {
			return time.Time{}, false
		}
		return at.UTC(), true
	}
	// cron: walk forward from ever earlier points until a tick at or before now is found.
	for _, back := range []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 366 * 24 * time.Hour} {
		var last time.Time
		after := now.Add(-back)
		for range 100000 {
			t, ok := expr.Next(after, loc)
			if !ok || t.After(now) {
				break
			}
			last, after = t, t
		}
		if !last.IsZero() {
			return last.UTC(), true
		}
	}
	return time.Time{}, false
}

// NextFireTimes returns up to n fire times of a schedule expression after now, in UTC, and a
// problem ("" if none) when the expression or the time zone cannot be read. tz "" means UTC.
// start is when a rate schedule began counting (its start or creation date); zero means now.
func NextFireTimes(expression, tz string, start, now time.Time, n int) ([]time.Time, string) {
	expr, err := scheduler.ParseExpression(expression)
	if err != nil {
		return nil, err.Error()
	}
	loc := time.UTC
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return nil, fmt.Sprintf("time zone %q: %v", tz, err)
		}
	}
	after := now
	if expr.Kind() == scheduler.KindRate && !start.IsZero() && start.Before(now) {
		// The last tick at or before now: rate ticks fall at start + k × interval.
		iv := expr.Interval()
		after = start.Add(now.Sub(start) / iv * iv)
	}
	var out []time.Time
	for len(out) < n {
		t, ok := expr.Next(after, loc)
		if !ok {
			break
		}
		out = append(out, t.UTC())
		after = t
	}
	return out, ""
}
