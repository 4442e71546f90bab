package jobs

// Outcomes: a job's error decides retry, snooze or dead-letter; dead letters carry the failure.

import (
	"cmp"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/event"
)

// settle sets the record's outcome from the job's error, dead-lettering permanent failures.
func (b *batch) settle(r *record, err error) {
	h := b.h
	if err == nil {
		r.out = outSucceeded
		if h.log.Enabled(b.ctx, slog.LevelDebug) {
			b.logRecord(slog.LevelDebug, r, "job succeeded", nil, slog.Float64("duration_ms", ms(r.dur)))
		}
		b.event(r, event.Succeeded, "", nil, "")
		return
	}
	if r.isLost() {
		// Another consumer has it, or it is gone: neither retry delay nor dead-letter is ours.
		r.out = outRetry
		b.logRecord(slog.LevelWarn, r, "job failed after its message was lost: reported failed, left alone", err)
		b.event(r, event.Returned, event.NoteLost, err, "")
		return
	}
	if errors.Is(err, ErrCancelled) {
		r.out = outCancelled
		b.logRecord(slog.LevelInfo, r, "job cancelled: deleted without running", err)
		b.event(r, event.Cancelled, "", err, "")
		var of interface{ CancelledJob() string }
		if !errors.As(err, &of) || of.CancelledJob() != r.row.ID {
			// A job sharing its idempotency key with the one cancelled, or one whose middleware
			// or worker says it is cancelled without naming it: its own state (and its fan-out
			// batch) learn it here. The cancelled job's were recorded by the cancel.
			_ = b.recordState(r, StateCancelled, contract.ReasonCancelled, err)
		}
		return
	}
	var snooze *SnoozeError
	if errors.As(err, &snooze) {
		r.out, r.visible, r.delay = outSnoozed, true, b.clampVisibility(snooze.Duration)
		r.notRun = snooze.NotRun
		b.logRecord(slog.LevelInfo, r, "job snoozed", nil, slog.Float64("snooze_s", r.delay.Seconds()))
		b.event(r, event.Snoozed, "", nil, "")
		b.recordState(r, StateRetrying, "", err)
		return
	}
	reason := permanentReason(err)
	if reason == "" && b.draining() {
		r.out, r.visible, r.delay = outRetry, true, 0
		b.logRecord(slog.LevelWarn, r, "job interrupted by the consumer's drain: released for another consumer", err)
		b.event(r, event.Returned, event.NoteReleased, err, "")
		return
	}
	lastAttempt := r.row.Attempt >= r.row.MaxAttempts
	var unknown *UnknownKindError
	if reason == contract.ReasonUnknownKind && !lastAttempt && errors.As(err, &unknown) {
		// Deploy skew: a producer may be deployed before the consumer that knows the kind. Retry
		// with backoff; dead-letter as unknown_kind only once the attempts are used.
		reason = ""
	}
	if reason == "" && lastAttempt {
		reason = contract.ReasonAttemptsUsed
		if unknown != nil {
			reason = contract.ReasonUnknownKind
		}
	}
	if reason != "" && r.state.Load() == stateAbandoned {
		// Already reported failed: it comes back, and is dead-lettered then.
		r.out = outRetry
		return
	}
	if reason == "" {
		backoff := h.cfg.Backoff
		if reg := r.row.reg; reg != nil && reg.opts.Backoff != nil {
			backoff = reg.opts.Backoff
		}
		r.out, r.visible, r.delay = outRetry, true, b.clampVisibility(backoff(r.row.Attempt))
		b.logRecord(slog.LevelWarn, r, "job failed: will retry", err, slog.Float64("retry_in_s", r.delay.Seconds()))
		b.event(r, event.Retried, "", err, "")
		b.recordState(r, StateRetrying, "", err)
		return
	}
	state := StateDead
	if reason == contract.ReasonCancelled {
		state = StateCancelled
	}
	if stErr := b.recordState(r, state, reason, err); stErr != nil {
		r.out = outDeadFailed
		b.logRecord(slog.LevelError, r, "job state not recorded: dead job reported failed, to be dead-lettered on its next delivery", err,
			slog.String("reason", reason), LogString("state_error", stErr.Error()))
		b.event(r, event.Returned, event.NoteDeadStateNotRecorded, err, reason)
		return
	}
	if !r.state.CompareAndSwap(stateRunning, stateDeadLettering) {
		// The hard stop came first and reported it failed: it comes back, and is dead-lettered then.
		r.out = outRetry
		return
	}
	defer r.state.Store(stateDone)
	if dlqErr := b.deadLetter(r, reason, err); dlqErr != nil {
		r.out = outDeadFailed
		b.logRecord(slog.LevelError, r, "dead-letter send failed: job reported failed", err,
			slog.String("reason", reason), LogString("dlq_error", dlqErr.Error()))
		b.event(r, event.Returned, event.NoteDeadLetterFailed, err, reason)
		return
	}
	r.out = outDead
	b.logRecord(slog.LevelError, r, "job dead-lettered", err, slog.String("reason", reason))
	b.event(r, event.Dead, "", err, reason)
}

// permanentReason returns the dead-letter reason of a permanent error, or "" for a retryable one.
func permanentReason(err error) string {
	var dr deadLetterReasoner
	if errors.As(err, &dr) {
		if reason := dr.DeadLetterReason(); reason != "" {
			return reason
		}
	}
	var cancel *CancelError
	if errors.As(err, &cancel) {
		return contract.ReasonCancelled
	}
	var args *ArgsError
	if errors.As(err, &args) {
		return contract.ReasonBadArgs
	}
	return ""
}

// skip lists a FIFO record without running it, returning with the failed record before it.
func (b *batch) skip(r, failed *record) {
	if !r.state.CompareAndSwap(statePending, stateRunning) {
		return
	}
	r.out, r.visible, r.delay = outSkipped, failed.visible, failed.delay
	b.logRecord(slog.LevelWarn, r, "job not run: an earlier job of its FIFO group failed", nil,
		LogString("failed_job_id", failed.row.ID))
	b.event(r, event.NotRun, event.NoteFIFOSkipped, nil, "")
	r.state.CompareAndSwap(stateRunning, stateDone)
}

// deadLetter sends the record's message to the DLQ with the failure attached. The copy always
// fits SQS's size limit (see deadLetterAttributes).
func (b *batch) deadLetter(r *record, reason string, jobErr error) error {
	h := b.h
	firstReceived := ""
	if !r.row.FirstReceivedAt.IsZero() {
		firstReceived = r.row.FirstReceivedAt.Format(time.RFC3339Nano)
	}
	// Most important last: deadLetterAttributes sheds from the front when the body leaves too
	// little room, so the reason and the attempt count are the last to go.
	list := []dlqAttr{
		{name: contract.AttrError, value: errString(jobErr), cut: true},
		{name: contract.AttrSourceQueue, value: r.row.QueueURL},
		{name: contract.AttrFunction, value: h.cfg.FunctionName},
		{name: contract.AttrFirstFailureAt, value: firstReceived},
		{name: contract.AttrFailedAt, value: time.Now().UTC().Format(time.RFC3339Nano)},
		{name: contract.AttrSourceMessageID, value: r.msg.MessageID},
		{name: contract.AttrJobID, value: r.row.ID},
		{name: contract.AttrKind, value: r.row.Kind},
		{name: contract.AttrAttempts, value: strconv.Itoa(r.row.Attempt), number: true},
		{name: contract.AttrReason, value: reason},
	}
	if r.pointer != nil {
		// The copy keeps the pointer body (the object stays until the job succeeds) and the
		// extended clients' size attribute, so a redrive sends back a claim check they read too.
		// SQS allows 10 attributes: the function's name gives way.
		if size := r.pointer.sizeOf(r.msg); size != "" {
			list[2] = dlqAttr{name: contract.AttrPayloadSize, value: size, number: true}
		}
	}
	attrs, shed := deadLetterAttributes(len(r.msg.Body), list)
	if shed > 0 {
		b.logRecord(slog.LevelWarn, r, "dead-letter copy too large for all its attributes: some left off", nil,
			slog.Int("attributes_left_off", shed), slog.Int("body_bytes", len(r.msg.Body)))
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(h.cfg.DLQURL),
		MessageBody:       aws.String(r.msg.Body),
		MessageAttributes: attrs,
	}
	if h.dlqFIFO {
		group := r.row.GroupID
		group = cmp.Or(group, "jobkit")
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(dedupID(r.msg.MessageID))
	}
	_, err := h.cfg.SQS.SendMessage(b.post(), in)
	return err
}

// dlqAttr is one attribute of a dead-letter copy.
type dlqAttr struct {
	name, value string
	number      bool // DataType Number, else String
	cut         bool // may be cut to fit (the error text), else whole or left off
}

// deadLetterAttributes returns the attributes of a dead-letter copy of a bodyLen-byte body that
// fit with it in MaxMessageSize, counted as SQS counts them (body, and each attribute's name, data
// type and value), and how many it left off. Values are sanitised before they are measured
// (sanitising can grow a value: an invalid byte becomes a 3-byte U+FFFD). The error text is cut to
// at most 4 KiB and to the room left; when even the others do not fit, they are left off in the
// order given — the error first, then source queue, function, first receive, failure time,
// source message id, job id, kind, attempts and, last of all, the reason.
func deadLetterAttributes(bodyLen int, list []dlqAttr) (map[string]sqstypes.MessageAttributeValue, int) {
	size := func(a dlqAttr) int {
		typ := len("String")
		if a.number {
			typ = len("Number")
		}
		return len(a.name) + typ + len(a.value)
	}
	total := bodyLen
	for i := range list {
		list[i].value = sanitizeAttr(list[i].value)
		if list[i].cut {
			list[i].value = truncateUTF8(list[i].value, maxErrorAttr)
		}
		if list[i].value != "" {
			total += size(list[i])
		}
	}
	shed := 0
	for i := 0; i < len(list) && total > MaxMessageSize; i++ {
		a := &list[i]
		if a.value == "" {
			continue
		}
		total -= size(*a)
		if a.cut {
			if room := MaxMessageSize - total - size(dlqAttr{name: a.name}); room > 0 {
				a.value = truncateUTF8(a.value, room) // truncation never grows a sanitised value
				total += size(*a)
				if a.value != "" && total <= MaxMessageSize {
					break
				}
				total -= size(*a)
			}
		}
		a.value = ""
		shed++
	}
	attrs := make(map[string]sqstypes.MessageAttributeValue, len(list))
	for _, a := range list {
		if a.value == "" {
			continue
		}
		typ := "String"
		if a.number {
			typ = "Number"
		}
		attrs[a.name] = sqstypes.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(a.value)}
	}
	return attrs, shed
}

// dedupID keeps a message id within SQS's 128-character deduplication id limit.
func dedupID(id string) string {
	if len(id) > 128 {
		return id[:128]
	}
	return id
}
