package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	_ "time/tzdata" // time zones validate the same on every host, Lambda's included

	"github.com/jobkit-go/jobkit/jobs"
)

// ScheduledTimePlaceholder is the EventBridge Scheduler context attribute that Scheduler replaces,
// in a target's input, with the time the tick was scheduled for (RFC 3339, UTC, e.g.
// 2026-11-21T09:00:00Z). Schedule.Input uses it; RenderInput does the same substitution locally.
const ScheduledTimePlaceholder = "<aws.scheduler.scheduled-time>"

// TickIDPrefix starts the envelope id of every schedule tick: sched:<name>:<scheduled-time>.
const TickIDPrefix = "sched:"

// Limits EventBridge Scheduler puts on a schedule.
const (
	DefaultMaxRetries  = 185            // retries when no RetryPolicy is given (also the maximum)
	DefaultMaxEventAge = 24 * time.Hour // event age when no RetryPolicy is given (also the maximum)
	MinMaxEventAge     = time.Minute    // the shortest MaxEventAge allowed
	MaxFlexibleWindow  = 24 * time.Hour // the longest flexible time window
	maxNameLen         = 64
	maxGroupIDLen      = 128
	maxDescriptionLen  = 512
)

var validName = regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)

// RetryPolicy is how long and how often EventBridge Scheduler retries delivering a tick to the
// queue before giving up (and sending it to the dead-letter queue, if any).
type RetryPolicy struct {
	// MaxRetries is the number of retries, 0-185. 0 means no retry.
	MaxRetries int
	// MaxEventAge is how long a tick is retried, 1 minute to 24 hours in whole seconds; 0 means 24 hours.
	MaxEventAge time.Duration
}

// EventAge returns MaxEventAge, or DefaultMaxEventAge when it is 0.
func (p RetryPolicy) EventAge() time.Duration {
	if p.MaxEventAge == 0 {
		return DefaultMaxEventAge
	}
	return p.MaxEventAge
}

func (p RetryPolicy) validate(schedule string) error {
	if p.MaxRetries < 0 || p.MaxRetries > DefaultMaxRetries {
		return &ValidationError{Schedule: schedule, Field: "Retry.MaxRetries", Reason: fmt.Sprintf("%d is outside 0-%d", p.MaxRetries, DefaultMaxRetries)}
	}
	if p.MaxEventAge != 0 && (p.MaxEventAge < MinMaxEventAge || p.MaxEventAge > DefaultMaxEventAge || p.MaxEventAge%time.Second != 0) {
		return &ValidationError{Schedule: schedule, Field: "Retry.MaxEventAge", Reason: fmt.Sprintf("%s is not whole seconds between 1m and 24h (0 means 24h)", p.MaxEventAge)}
	}
	return nil
}

// Schedule is a recurring (or one-time) job declared once in Go: the CDK construct
// (infra/constructs.NewSchedule) renders it as an EventBridge Scheduler schedule, and the offline
// stack (offline/schedfire) fires it. Every tick sends one envelope to the target queue whose id is
// sched:<Name>:<scheduled-time>, so a tick delivered twice is the same job.
type Schedule struct {
	// Name identifies the schedule: 1-64 letters, digits, '-', '_' or '.'; unique in its group.
	// It is part of every tick's envelope id.
	Name string
	// Expression is when it fires: cron(minutes hours day-of-month month day-of-week year),
	// rate(value unit) or at(yyyy-mm-ddThh:mm:ss). See ParseExpression.
	Expression string
	// TimeZone is the IANA time zone cron and at are evaluated in (e.g. "Europe/Berlin"); "" is UTC.
	TimeZone string
	// FlexibleWindow lets Scheduler deliver a tick up to this long after its time (whole minutes,
	// at most 24 h); 0 turns the window off. The offline runner (offline/schedfire) always fires on time.
	FlexibleWindow time.Duration
	// Args is the job each tick runs: its Kind and JSON are the envelope's kind and args.
	Args jobs.JobArgs
	// Queue names the target queue: the logical name the stack and the local runner agree on (the
	// construct is handed the queue itself; the offline runner resolves the name with its Queues map, or
	// by queue name). A URL is accepted as well. A name ending in ".fifo" requires GroupID.
	Queue string
	// GroupID is the FIFO message group id every tick is sent with (1-128 characters). A FIFO
	// target queue needs one, and needs content-based deduplication turned on.
	GroupID string
	// Retry is the delivery retry policy; nil means Scheduler's defaults (185 retries over 24 h).
	Retry *RetryPolicy
	// DeadLetterQueue names the queue ticks go to when delivery fails for good ("" for none),
	// resolved like Queue.
	DeadLetterQueue string
	// Description is shown in the console; at most 512 characters.
	Description string
}

// Validate reports the first problem that would make EventBridge Scheduler (or the runner) reject
// the schedule, as a *ValidationError.
func (s Schedule) Validate() error {
	invalid := func(field, reason string, err error) error {
		return &ValidationError{Schedule: s.Name, Field: field, Reason: reason, Err: err}
	}
	if !validName.MatchString(s.Name) {
		return invalid("Name", fmt.Sprintf("%q must be 1-%d letters, digits, '-', '_' or '.'", s.Name, maxNameLen), nil)
	}
	expr, err := ParseExpression(s.Expression)
	if err != nil {
		return invalid("Expression", "not a valid schedule expression", err)
	}
	loc, err := s.Location()
	if err != nil {
		return err
	}
	if expr.Kind() == KindAt {
		if _, ok := resolveLocal(expr.at, loc); !ok {
			return invalid("Expression", fmt.Sprintf("%s does not exist in %s (clocks go forward over it)", s.Expression, loc), nil)
		}
	}
	if s.FlexibleWindow < 0 || s.FlexibleWindow > MaxFlexibleWindow || s.FlexibleWindow%time.Minute != 0 {
		return invalid("FlexibleWindow", fmt.Sprintf("%s is not whole minutes between 1m and 24h (0 turns it off)", s.FlexibleWindow), nil)
	}
	if s.Args == nil {
		return invalid("Args", "no job args", nil)
	}
	if s.Args.Kind() == "" {
		return invalid("Args", fmt.Sprintf("%T has an empty Kind()", s.Args), nil)
	}
	if _, err := json.Marshal(s.Args); err != nil {
		return invalid("Args", "does not encode as JSON", err)
	}
	if s.Queue == "" {
		return invalid("Queue", "no target queue", nil)
	}
	if len(s.GroupID) > maxGroupIDLen {
		return invalid("GroupID", fmt.Sprintf("longer than %d characters", maxGroupIDLen), nil)
	}
	if s.GroupID == "" && strings.HasSuffix(s.Queue, ".fifo") {
		return invalid("GroupID", "a FIFO target queue needs a message group id", nil)
	}
	if strings.HasSuffix(s.DeadLetterQueue, ".fifo") {
		return invalid("DeadLetterQueue", "EventBridge Scheduler needs a Standard queue as dead-letter queue, not a FIFO one", nil)
	}
	if s.Retry != nil {
		if err := s.Retry.validate(s.Name); err != nil {
			return err
		}
	}
	if len(s.Description) > maxDescriptionLen {
		return invalid("Description", fmt.Sprintf("longer than %d characters", maxDescriptionLen), nil)
	}
	return nil
}

// Location returns the schedule's time zone (UTC when TimeZone is empty).
func (s Schedule) Location() (*time.Location, error) {
	if s.TimeZone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil || s.TimeZone == "Local" {
		return nil, &ValidationError{Schedule: s.Name, Field: "TimeZone", Reason: fmt.Sprintf("%q is not an IANA time zone name", s.TimeZone), Err: err}
	}
	return loc, nil
}

// TimeZoneName returns TimeZone, or "UTC" when it is empty.
func (s Schedule) TimeZoneName() string {
	if s.TimeZone == "" {
		return "UTC"
	}
	return s.TimeZone
}

// Next returns the schedule's first tick strictly after `after` (see Expression.Next), and false
// when it has none left.
func (s Schedule) Next(after time.Time) (time.Time, bool, error) {
	if err := s.Validate(); err != nil {
		return time.Time{}, false, err
	}
	loc, _ := s.Location()
	t, ok := MustParseExpression(s.Expression).Next(after, loc)
	return t, ok, nil
}

// Input returns the target input: the envelope of a tick with ScheduledTimePlaceholder where the
// scheduled time goes, in the id and in enqueued_at. EventBridge Scheduler substitutes it on every
// tick; RenderInput does the same locally.
//
//	{"v":1,"id":"sched:nightly-report:<aws.scheduler.scheduled-time>","kind":"report.nightly","args":{...},"enqueued_at":"<aws.scheduler.scheduled-time>"}
func (s Schedule) Input() (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	env := struct {
		V          int          `json:"v"`
		ID         string       `json:"id"`
		Kind       string       `json:"kind"`
		Args       jobs.JobArgs `json:"args"`
		EnqueuedAt string       `json:"enqueued_at"`
	}{jobs.EnvelopeVersion, TickIDPrefix + s.Name + ":" + ScheduledTimePlaceholder, s.Args.Kind(), s.Args, ScheduledTimePlaceholder}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep the placeholder's < > as Scheduler must see them
	if err := enc.Encode(env); err != nil {
		return "", &ValidationError{Schedule: s.Name, Field: "Args", Reason: "does not encode as JSON", Err: err}
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// Envelope returns the message body of the tick scheduled for `scheduled`: Input rendered with
// RenderInput.
func (s Schedule) Envelope(scheduled time.Time) (string, error) {
	in, err := s.Input()
	if err != nil {
		return "", err
	}
	return RenderInput(in, scheduled), nil
}

// TickID returns the envelope id of the tick of schedule `name` scheduled for `scheduled`:
// sched:<name>:<RFC 3339 UTC>.
func TickID(name string, scheduled time.Time) string {
	return TickIDPrefix + name + ":" + FormatScheduledTime(scheduled)
}

// FormatScheduledTime formats t as EventBridge Scheduler writes <aws.scheduler.scheduled-time>:
// RFC 3339 in UTC, whole seconds.
func FormatScheduledTime(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// RenderInput substitutes the scheduled time for every ScheduledTimePlaceholder in a target input,
// as EventBridge Scheduler does on each tick. An input without the placeholder is returned as is.
func RenderInput(input string, scheduled time.Time) string {
	return strings.ReplaceAll(input, ScheduledTimePlaceholder, FormatScheduledTime(scheduled))
}
