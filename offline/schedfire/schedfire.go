package schedfire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/scheduler"
)

// Clock is Runner's time source. Tests inject a manual clock; SystemClock is the real one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed (at once when d <= 0).
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock returns the wall clock.
func SystemClock() Clock { return systemClock{} }

// SQSAPI is the part of the SQS API Runner uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// SchedulerAPI is the part of the EventBridge Scheduler API Runner uses to find and
// fire the schedules stored in groups.
type SchedulerAPI interface {
	ListSchedules(ctx context.Context, in *awsscheduler.ListSchedulesInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.ListSchedulesOutput, error)
	GetSchedule(ctx context.Context, in *awsscheduler.GetScheduleInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.GetScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *awsscheduler.DeleteScheduleInput, optFns ...func(*awsscheduler.Options)) (*awsscheduler.DeleteScheduleOutput, error)
}

var (
	_ SQSAPI       = (*sqs.Client)(nil)
	_ SchedulerAPI = (*awsscheduler.Client)(nil)
)

// ReasonUndeliverable is the contract.AttrReason Runner puts on a tick it sends to a schedule's
// dead-letter queue because the target queue refused it.
const ReasonUndeliverable = "schedule_undeliverable"

// Config configures a Runner.
type Config struct {
	// SQS sends the ticks (required).
	SQS SQSAPI
	// Scheduler reads the schedules of Groups; required when Groups is set.
	Scheduler SchedulerAPI
	// Schedules are the declared schedules to fire.
	Schedules []scheduler.Schedule
	// Groups are schedule groups whose stored schedules are fired too: the one-time schedules a
	// Delayer creates, which the emulator keeps but never runs.
	Groups []string
	// Queues maps the logical queue names of Schedule.Queue and Schedule.DeadLetterQueue to
	// queue URLs. A name not in it is looked up by queue name (GetQueueUrl); a URL is used as is.
	Queues map[string]string
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// PollInterval is how often Groups are listed for new or deleted schedules; 0 means 5 s.
	PollInterval time.Duration
	// Logger receives one line per tick and per problem; nil means slog.Default().
	Logger *slog.Logger
	// OnFire, when set, is called after every tick sent (or failed), in order.
	OnFire func(Firing)
}

// Firing is one tick Runner sent.
type Firing struct {
	Schedule      string    // the schedule name
	Group         string    // its group; "" for a declared schedule
	ScheduledTime time.Time // the tick's time (the <aws.scheduler.scheduled-time> it rendered)
	JobID         string    // the envelope id, when the input is an envelope
	Kind          string    // the envelope kind, when the input is an envelope
	QueueURL      string    // where it was sent
	MessageID     string    // the SQS message id
	Body          string    // the message body
	Err           error     // why it was not delivered to QueueURL (it went to the DLQ, if any)
}

// Runner fires schedules offline, as EventBridge Scheduler would: the declared Schedules and
// the schedules stored in Groups (moto and LocalStack keep them but never fire them). Each tick
// renders the schedule's input with its scheduled time (scheduler.RenderInput) and sends it to the target
// queue — with the schedule's message group on a FIFO queue and, as Scheduler, no deduplication
// id: a FIFO target needs content-based deduplication, here as on AWS. A one-time schedule whose ActionAfterCompletion is DELETE is deleted once fired.
//
// Timing follows Expression.Next. A rate schedule ticks first when the runner starts (Scheduler
// starts a rate schedule without a start date at once) or at its StartDate; a cron schedule
// ticks at its next match from the start. Ticks missed while the runner was held up are all sent,
// in order, unless older than the schedule's MaxEventAge (24 h by default), which Scheduler
// would have dropped. A stored one-time schedule that is already due when found is sent at once,
// however late; a declared at() already past at start is not sent. FlexibleWindow is ignored:
// ticks are sent on time. With an injected Clock every decision is deterministic.
type Runner struct {
	cfg     Config
	clock   Clock
	log     *slog.Logger
	sources map[string]*source
	fired   map[string]bool // one-time stored schedules already sent (kept when not deleted)

	mu   sync.Mutex
	urls map[string]string // queue URLs by account/name
}

// source is one schedule the runner fires.
type source struct {
	key         string // "<group>/<name>"; declared schedules have group ""
	name, group string
	expr        scheduler.Expression
	loc         *time.Location
	input       string
	queueURL    string
	groupID     string
	dlqURL      string
	maxAge      time.Duration // 0: no limit
	deleteAfter bool
	end         time.Time
	next        time.Time
	done        bool
}

// New checks cfg and returns a runner. Declared schedules are validated here
// (*ValidationError); their queues are resolved when Run starts.
func New(cfg Config) (*Runner, error) {
	if cfg.SQS == nil {
		return nil, errors.New("scheduler: New: nil SQS client")
	}
	if len(cfg.Groups) > 0 && cfg.Scheduler == nil {
		return nil, errors.New("scheduler: New: Groups need a Scheduler client")
	}
	seen := map[string]bool{}
	for _, s := range cfg.Schedules {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, &scheduler.ValidationError{Schedule: s.Name, Field: "Name", Reason: "declared twice"}
		}
		seen[s.Name] = true
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger,
		sources: map[string]*source{}, fired: map[string]bool{}, urls: map[string]string{},
	}, nil
}

// Run fires schedules until ctx ends, then returns nil. It returns an error at once when a
// declared schedule's queue cannot be resolved; later problems (a failed send, an unreadable
// stored schedule) are logged and the runner goes on.
func (r *Runner) Run(ctx context.Context) error {
	now := r.clock.Now()
	for _, s := range r.cfg.Schedules {
		src, err := r.declared(ctx, s)
		if err != nil {
			return err
		}
		src.next, src.done = firstTick(src.expr, src.loc, now, time.Time{})
		if src.expr.Kind() == scheduler.KindAt && src.done {
			r.log.Info("scheduler: declared one-time schedule is past; not fired", "schedule", s.Name, "expression", s.Expression)
		}
		r.sources[src.key] = src
	}
	var nextPoll time.Time
	for {
		if len(r.cfg.Groups) > 0 && !now.Before(nextPoll) {
			r.poll(ctx, now)
			nextPoll = now.Add(r.cfg.PollInterval)
		}
		r.fireDue(ctx, now)
		wake, ok := r.nextWake()
		if len(r.cfg.Groups) > 0 && (!ok || nextPoll.Before(wake)) {
			wake, ok = nextPoll, true
		}
		var timer <-chan time.Time
		if ok {
			timer = r.clock.After(wake.Sub(now))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-timer:
		}
		now = r.clock.Now()
	}
}

// Send sends the tick of declared schedule s scheduled for `scheduled`, now: what Run does on
// each tick. It is safe to call while Run runs (to fire a schedule on demand). Sending the same
// tick twice sends the same envelope (on a FIFO queue, content-based deduplication keeps one
// within its window; elsewhere the idempotent worker runs it once).
func (r *Runner) Send(ctx context.Context, s scheduler.Schedule, scheduled time.Time) (Firing, error) {
	if err := s.Validate(); err != nil {
		return Firing{}, err
	}
	src, err := r.declared(ctx, s)
	if err != nil {
		return Firing{}, err
	}
	f := r.send(ctx, src, scheduled)
	return f, f.Err
}

// declared turns a validated declared schedule into a source, resolving its queues.
func (r *Runner) declared(ctx context.Context, s scheduler.Schedule) (*source, error) {
	loc, _ := s.Location()
	input, err := s.Input()
	if err != nil {
		return nil, err
	}
	src := &source{
		key: "/" + s.Name, name: s.Name, expr: scheduler.MustParseExpression(s.Expression), loc: loc,
		input: input, groupID: s.GroupID, maxAge: scheduler.DefaultMaxEventAge,
	}
	if s.Retry != nil {
		src.maxAge = s.Retry.EventAge()
	}
	if src.queueURL, err = r.resolve(ctx, s.Queue); err != nil {
		return nil, &scheduler.ValidationError{Schedule: s.Name, Field: "Queue", Reason: "cannot resolve it to a queue URL", Err: err}
	}
	if s.DeadLetterQueue != "" {
		if src.dlqURL, err = r.resolve(ctx, s.DeadLetterQueue); err != nil {
			return nil, &scheduler.ValidationError{Schedule: s.Name, Field: "DeadLetterQueue", Reason: "cannot resolve it to a queue URL", Err: err}
		}
	}
	if awsarn.IsFIFO(src.queueURL) && src.groupID == "" {
		return nil, &scheduler.ValidationError{Schedule: s.Name, Field: "GroupID", Reason: "the target queue " + awsarn.QueueName(src.queueURL) + " is FIFO: it needs a message group id"}
	}
	return src, nil
}

// firstTick returns the first tick at or after now (rate: at start, or now when start is zero).
func firstTick(e scheduler.Expression, loc *time.Location, now, start time.Time) (time.Time, bool) {
	switch e.Kind() {
	case scheduler.KindRate:
		if start.IsZero() {
			return now.Truncate(time.Minute), false
		}
		if !start.Before(now) {
			return start, false
		}
		k := (now.Sub(start) + e.Interval() - 1) / e.Interval()
		return start.Add(k * e.Interval()), false
	case scheduler.KindAt:
		t, _ := e.At(loc)
		return t, t.Before(now)
	}
	if !start.IsZero() && start.After(now) {
		now = start
	}
	t, ok := e.Next(now.Add(-time.Nanosecond), loc)
	return t, !ok
}

// resolve turns a logical queue name, a queue name or a URL into a URL.
func (r *Runner) resolve(ctx context.Context, queue string) (string, error) {
	if u, ok := r.cfg.Queues[queue]; ok {
		return u, nil
	}
	if strings.HasPrefix(queue, "http://") || strings.HasPrefix(queue, "https://") {
		return queue, nil
	}
	return r.queueURL(ctx, queue, "")
}

// queueURL looks a queue up by name (and owner account), caching the answer.
func (r *Runner) queueURL(ctx context.Context, name, account string) (string, error) {
	key := account + "/" + name
	r.mu.Lock()
	u, ok := r.urls[key]
	r.mu.Unlock()
	if ok {
		return u, nil
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(name)}
	if account != "" {
		in.QueueOwnerAWSAccountId = aws.String(account)
	}
	out, err := r.cfg.SQS.GetQueueUrl(ctx, in)
	if err != nil {
		return "", fmt.Errorf("scheduler: queue %q: %w", name, err)
	}
	r.mu.Lock()
	r.urls[key] = aws.ToString(out.QueueUrl)
	r.mu.Unlock()
	return aws.ToString(out.QueueUrl), nil
}

// poll lists Groups, adds the enabled schedules not seen before and drops the ones deleted or
// paused since. A resumed schedule is read anew: it fires from its next time on, the ticks it
// missed while paused are not made up (as on AWS).
func (r *Runner) poll(ctx context.Context, now time.Time) {
	listed := map[string]bool{}
	for _, group := range r.cfg.Groups {
		p := awsscheduler.NewListSchedulesPaginator(r.cfg.Scheduler, &awsscheduler.ListSchedulesInput{GroupName: aws.String(group)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				r.log.Warn("scheduler: list schedules", "group", group, "error", err.Error())
				return // keep what we know rather than drop everything
			}
			for _, sum := range page.Schedules {
				if sum.State == types.ScheduleStateDisabled {
					continue // paused: dropped below if it was firing; read anew when resumed
				}
				name := aws.ToString(sum.Name)
				key := group + "/" + name
				listed[key] = true
				if _, known := r.sources[key]; known || r.fired[key] {
					continue
				}
				src, err := r.stored(ctx, group, name, now)
				if err != nil {
					r.log.Warn("scheduler: stored schedule not fired", "group", group, "schedule", name, "error", err.Error())
					r.fired[key] = true // do not retry an unreadable schedule on every poll
					continue
				}
				r.sources[key] = src
			}
		}
	}
	for key, src := range r.sources {
		if src.group != "" && !listed[key] {
			delete(r.sources, key) // deleted (a cancelled delayed job)
		}
	}
}

// stored reads a schedule from a group and turns it into a source.
func (r *Runner) stored(ctx context.Context, group, name string, now time.Time) (*source, error) {
	out, err := r.cfg.Scheduler.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(group), Name: aws.String(name)})
	if err != nil {
		return nil, err
	}
	expr, err := scheduler.ParseExpression(aws.ToString(out.ScheduleExpression))
	if err != nil {
		return nil, err
	}
	tz := aws.ToString(out.ScheduleExpressionTimezone)
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("scheduler: time zone %q: %w", tz, err)
	}
	t := out.Target
	if t == nil {
		return nil, errors.New("scheduler: no target")
	}
	account, qname, err := queueFromARN(aws.ToString(t.Arn))
	if err != nil {
		return nil, fmt.Errorf("scheduler: target is not an SQS queue: %w", err)
	}
	src := &source{
		key: group + "/" + name, name: name, group: group, expr: expr, loc: loc,
		input:       aws.ToString(t.Input),
		deleteAfter: out.ActionAfterCompletion == types.ActionAfterCompletionDelete,
		maxAge:      scheduler.DefaultMaxEventAge,
		end:         aws.ToTime(out.EndDate),
	}
	if src.queueURL, err = r.queueURL(ctx, qname, account); err != nil {
		return nil, err
	}
	if t.SqsParameters != nil {
		src.groupID = aws.ToString(t.SqsParameters.MessageGroupId)
	}
	if t.DeadLetterConfig != nil && aws.ToString(t.DeadLetterConfig.Arn) != "" {
		if dacct, dname, err := queueFromARN(aws.ToString(t.DeadLetterConfig.Arn)); err == nil {
			src.dlqURL, _ = r.queueURL(ctx, dname, dacct)
		}
	}
	if t.RetryPolicy != nil && t.RetryPolicy.MaximumEventAgeInSeconds != nil {
		src.maxAge = time.Duration(*t.RetryPolicy.MaximumEventAgeInSeconds) * time.Second
	}
	start := aws.ToTime(out.StartDate)
	if expr.Kind() == scheduler.KindRate && start.IsZero() {
		start = aws.ToTime(out.CreationDate)
	}
	if expr.Kind() == scheduler.KindAt {
		src.next, _ = expr.At(loc)
		src.maxAge = 0 // a stored one-time job is sent however late: nothing fired it meanwhile
	} else {
		src.next, src.done = firstTick(expr, loc, now, start)
	}
	return src, nil
}

// nextWake returns the earliest pending tick.
func (r *Runner) nextWake() (time.Time, bool) {
	var wake time.Time
	ok := false
	for _, src := range r.sources {
		if !src.done && (!ok || src.next.Before(wake)) {
			wake, ok = src.next, true
		}
	}
	return wake, ok
}

// fireDue sends every tick due at now, oldest first (ties by group/name).
func (r *Runner) fireDue(ctx context.Context, now time.Time) {
	for {
		var due []*source
		for _, src := range r.sources {
			if !src.done && !src.next.After(now) {
				due = append(due, src)
			}
		}
		if len(due) == 0 {
			return
		}
		sort.Slice(due, func(i, j int) bool {
			if !due[i].next.Equal(due[j].next) {
				return due[i].next.Before(due[j].next)
			}
			return due[i].key < due[j].key
		})
		for _, src := range due {
			r.fireOne(ctx, src, now)
		}
	}
}

func (r *Runner) fireOne(ctx context.Context, src *source, now time.Time) {
	tick := src.next
	if !src.end.IsZero() && tick.After(src.end) {
		src.done = true
		return
	}
	stillThere := true
	if src.group != "" {
		// A delayed job cancelled since the last poll must not run.
		_, err := r.cfg.Scheduler.GetSchedule(ctx, &awsscheduler.GetScheduleInput{GroupName: aws.String(src.group), Name: aws.String(src.name)})
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			stillThere = false
		}
	}
	switch {
	case !stillThere:
		delete(r.sources, src.key)
		return
	case src.maxAge > 0 && now.Sub(tick) > src.maxAge:
		r.log.Warn("scheduler: tick older than the schedule's maximum event age; dropped",
			"schedule", src.name, "group", src.group, "scheduled_time", scheduler.FormatScheduledTime(tick))
	default:
		r.send(ctx, src, tick)
	}
	if src.expr.Kind() == scheduler.KindAt {
		src.done = true
		r.fired[src.key] = src.group != ""
		delete(r.sources, src.key)
		if src.deleteAfter && src.group != "" {
			if _, err := r.cfg.Scheduler.DeleteSchedule(ctx, &awsscheduler.DeleteScheduleInput{GroupName: aws.String(src.group), Name: aws.String(src.name)}); err != nil {
				r.log.Warn("scheduler: delete completed schedule", "schedule", src.name, "group", src.group, "error", err.Error())
			}
		}
		return
	}
	next, ok := src.expr.Next(tick, src.loc)
	src.next, src.done = next, !ok
}

// send renders and sends one tick; a refused send goes to the DLQ when there is one.
func (r *Runner) send(ctx context.Context, src *source, tick time.Time) Firing {
	body := scheduler.RenderInput(src.input, tick)
	f := Firing{Schedule: src.name, Group: src.group, ScheduledTime: tick, QueueURL: src.queueURL, Body: body}
	var env struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}
	if json.Unmarshal([]byte(body), &env) == nil {
		f.JobID, f.Kind = env.ID, env.Kind
	}
	// Exactly what EventBridge Scheduler sends: the body and, on a FIFO queue, the message group
	// (SqsParameters) — never a deduplication id, so a FIFO queue without content-based
	// deduplication refuses the tick here as SQS refuses it on AWS.
	in := &sqs.SendMessageInput{QueueUrl: aws.String(src.queueURL), MessageBody: aws.String(body)}
	if awsarn.IsFIFO(src.queueURL) {
		in.MessageGroupId = aws.String(src.groupID)
	}
	out, err := r.cfg.SQS.SendMessage(ctx, in)
	attrs := []any{"schedule", src.name, "group", src.group, "scheduled_time", scheduler.FormatScheduledTime(tick),
		"job_id", f.JobID, "kind", f.Kind, "queue", awsarn.QueueName(src.queueURL)}
	if err == nil {
		f.MessageID = aws.ToString(out.MessageId)
		r.log.Info("scheduler: tick sent", append(attrs, "message_id", f.MessageID)...)
	} else {
		f.Err = fmt.Errorf("scheduler: send tick of %s to %s: %w", src.name, awsarn.QueueName(src.queueURL), err)
		r.log.Error("scheduler: tick not delivered", append(attrs, "error", err.Error())...)
		if src.dlqURL != "" {
			r.deadLetter(ctx, src, f)
		}
	}
	if r.cfg.OnFire != nil {
		r.cfg.OnFire(f)
	}
	return f
}

func (r *Runner) deadLetter(ctx context.Context, src *source, f Firing) {
	str := func(v string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]sqstypes.MessageAttributeValue{
		contract.AttrReason:      str(ReasonUndeliverable),
		contract.AttrError:       str(truncate(f.Err.Error(), 4096)),
		contract.AttrSourceQueue: str(src.queueURL),
		contract.AttrFailedAt:    str(r.clock.Now().UTC().Format(time.RFC3339)),
	}
	if f.JobID != "" {
		attrs[contract.AttrJobID] = str(f.JobID)
	}
	if f.Kind != "" {
		attrs[contract.AttrKind] = str(f.Kind)
	}
	if _, err := r.cfg.SQS.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(src.dlqURL), MessageBody: aws.String(f.Body), MessageAttributes: attrs,
	}); err != nil {
		r.log.Error("scheduler: tick not dead-lettered either", "schedule", src.name, "error", err.Error())
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// queueFromARN splits an SQS queue ARN into its account and name.
func queueFromARN(arn string) (account, name string, err error) {
	q, err := awsarn.ParseQueue(arn)
	if err != nil {
		return "", "", fmt.Errorf("schedfire: %w", err)
	}
	return q.Account, q.Name, nil
}
