package inspect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// RedriveMethod is how Redrive moves messages.
type RedriveMethod string

// Redrive methods.
const (
	// RedriveAuto uses RedriveNative when no filter is set and the endpoint implements
	// StartMessageMoveTask, and RedriveManual otherwise.
	RedriveAuto RedriveMethod = ""
	// RedriveNative starts an SQS message move task (StartMessageMoveTask) and follows it with
	// ListMessageMoveTasks until it ends. SQS moves the messages itself.
	RedriveNative RedriveMethod = "native"
	// RedriveManual moves messages with receive → send → delete (see Inspector.Redrive).
	RedriveManual RedriveMethod = "manual"
)

// ErrNativeUnsupported: the endpoint does not implement StartMessageMoveTask (the offline
// emulator, for one). RedriveAuto falls back to the manual move on it.
var ErrNativeUnsupported = errors.New("inspect: the endpoint does not support StartMessageMoveTask")

// DefaultRedriveConcurrency is the number of manual-move workers when RedriveOptions leaves it 0.
const DefaultRedriveConcurrency = 4

// redriveBatch is the number of messages one manual-move worker handles at a time (the SQS batch limit).
const redriveBatch = 10

// batchBytes caps the payload of one SendMessageBatch call (the long-standing SQS limit; newer
// limits are larger).
const batchBytes = 256 * 1024

// RedriveOptions tunes Redrive; nil means defaults.
type RedriveOptions struct {
	Method RedriveMethod

	// To sends every message to this queue URL, whatever the message says. The caller (an
	// operator's --to) vouches for it: it is not checked against the DLQ's source queues.
	To string
	// Source is the queue URL for messages that do not name their source queue
	// (jobs.AttrSourceQueue). Empty means the one queue whose RedrivePolicy targets the DLQ, if
	// there is exactly one. The caller vouches for it: a message naming it is sent there.
	Source string
	// Sources are more queue URLs a message's jobs.AttrSourceQueue may name, besides Source and
	// the queues ListDeadLetterSourceQueues returns for the DLQ: the deployed stack's queues that
	// use this DLQ, for one. See Inspector.Redrive.
	Sources []string

	// Filter selects the messages to move (manual method only; the rest stay in the DLQ).
	Filter Filter

	// Concurrency is the number of manual-move workers; 0 means DefaultRedriveConcurrency. Each
	// moves at most 10 messages at a time, so at most 10 × Concurrency messages are ever sent and
	// not yet deleted: the in-flight window (see RedriveOptions.Window).
	Concurrency int
	// Visibility is the visibility timeout of messages the manual move receives; a message whose
	// move is interrupted returns to the DLQ after it. 0 means 30 s.
	Visibility time.Duration
	// InFlightWait is how long the manual move waits, once the DLQ looks empty, for messages that
	// are in flight on it (an interrupted redrive's, a listing's) to come back so it can move them
	// too. 0 means Visibility + 15 s; negative means do not wait.
	InFlightWait time.Duration

	// MaxPerSecond caps a native move task's rate (MaxNumberOfMessagesPerSecond, ≤ 500); 0 lets SQS choose.
	MaxPerSecond int32
	// PollInterval is how often a native move task's progress is read; 0 means 2 s.
	PollInterval time.Duration

	// Progress, if set, is called after every batch (manual) or poll (native), never concurrently.
	Progress func(RedriveProgress)
}

// Window returns the manual move's in-flight window: the most messages that can be sent to their
// queue and not yet deleted from the DLQ at any moment (10 × Concurrency). A redrive killed
// outright (no chance to finish its batches) leaves at most this many messages that the next run
// sends a second time.
func (o *RedriveOptions) Window() int {
	c := DefaultRedriveConcurrency
	if o != nil && o.Concurrency > 0 {
		c = o.Concurrency
	}
	return redriveBatch * c
}

// RedriveProgress reports a redrive as it runs.
type RedriveProgress struct {
	Method  RedriveMethod
	Total   int64 // messages in the DLQ when the redrive began (approximate)
	Moved   int64 // sent to their queue and deleted from the DLQ
	Skipped int64 // left in the DLQ: filtered out, no destination, or came back during the run
	Failed  int64 // sends that failed so far (they stay in the DLQ)
	// InFlight is the number of messages sent and not yet deleted right now (manual).
	InFlight int
}

// RedriveResult is the outcome of a redrive.
type RedriveResult struct {
	Method RedriveMethod
	// FallbackReason says why RedriveAuto used the manual move ("" otherwise).
	FallbackReason string
	// TaskHandle identifies the native move task.
	TaskHandle string
	// Total is the number of messages in the DLQ when the redrive began (approximate).
	Total int64
	// Moved messages were sent to their queue and deleted from the DLQ.
	Moved int64
	// Skipped messages stayed in the DLQ because the filter did not select them.
	Skipped int64
	// NoDestination messages stayed in the DLQ because they have no valid destination: their
	// jobs.AttrSourceQueue names a queue that is not one of the DLQ's source queues (a forged or
	// stale attribute), or they name none and no Source applies.
	NoDestination int64
	// Returned messages are jobs this run had already moved that failed again and came back to the
	// DLQ while it ran; they stay there (moving them again would loop).
	Returned int64
	// Failed messages could not be sent; they stay in the DLQ.
	Failed int64
	// Unconfirmed messages were sent but their delete from the DLQ failed: they are still in the DLQ,
	// and the next redrive sends them again (a duplicate each; job ids keep them idempotent).
	Unconfirmed int64
	// LeftInFlight is the number of messages that were in flight on the DLQ at the end (held by
	// another reader or an interrupted run) and so not moved; run the redrive again for them.
	LeftInFlight int64
	// PossibleDuplicates counts messages whose send got no clear answer the first time (a
	// connection error, a timeout, a 5xx, a 200 whose body was lost) and was made again, by the SDK's retry or a later pass:
	// SQS may hold them twice. Like any SQS Standard queue delivery, the job id keeps them
	// idempotent.
	PossibleDuplicates int64
	// Window is the manual move's in-flight window (RedriveOptions.Window).
	Window int
}

// Redrive moves dead jobs from the dead-letter queue back to the queue they came from.
//
// Native method: one StartMessageMoveTask (destination: To, else Source, else the DLQ's one source
// queue, else the messages' original source as SQS knows it), followed to its end.
//
// Manual method — what RedriveAuto falls back to where the endpoint lacks StartMessageMoveTask, and
// what filters need. Workers receive up to 10 messages each with the Visibility timeout, send each
// to its queue (To, else the jobs.AttrSourceQueue attribute, else Source) with SendMessageBatch,
// and only then delete the sent ones from the DLQ.
//
// A message's attribute is data from whoever could send to the DLQ, so it only picks among the
// queues the caller trusts: those ListDeadLetterSourceQueues returns for the DLQ (the queues whose
// RedrivePolicy targets it), Source and Sources. The message goes to that queue's trusted URL
// (queues are matched by account and name, as one queue has several URL spellings). A message
// naming any other queue is left in the DLQ and counted in RedriveResult.NoDestination. To, set by
// the caller, is not checked. So:
//   - an interruption never loses a message: one not yet sent is still in the DLQ (visible again
//     after Visibility), and one sent is in its queue;
//   - a run sends each DLQ message at most once: it remembers what it sent and what it is sending,
//     so a message that comes back (its delete failed, or its visibility ran out mid-move) is
//     deleted or left alone, not sent again — except after a send that got no clear answer (a
//     connection error, a timeout, a 5xx, a 200 whose body was lost: it may have gone through),
//     which is made again and counted in RedriveResult.PossibleDuplicates;
//   - a run killed outright leaves at most Window() messages sent but not deleted; the next run
//     sends those again, so each may arrive twice — never more, unless it is caught that way by a
//     second kill too. The envelope id keeps a duplicated job idempotent. A cancelled ctx
//     (Ctrl-C) instead lets every batch in progress finish its send and delete: no duplicates.
//
// On FIFO queues a message keeps its message group id, and its deduplication id is derived from the
// envelope id and the DLQ message id ("<job id>:redrive:<message id>", hashed when too long): a
// second send of the same dead message within SQS's 5-minute deduplication window is dropped by
// SQS, and the id differs from the producer's (the bare job id), so SQS never mistakes the redriven
// job for the original enqueue and drops it. Order within a group is kept: a worker holds a group's
// messages until they are deleted, so the next ones of the group are received only after them.
// A filtered-out message stays in flight until the run ends, which holds back the rest of its group.
//
// Messages the jobs runtime dead-letters carry no other message attributes than jobkit's; any
// non-jobkit attributes are carried over, jobkit's dead-letter attributes are not.
func (i *Inspector) Redrive(ctx context.Context, dlqURL string, opts *RedriveOptions) (*RedriveResult, error) {
	var o RedriveOptions
	if opts != nil {
		o = *opts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultRedriveConcurrency
	}
	if o.Visibility <= 0 {
		o.Visibility = 30 * time.Second
	}
	if o.InFlightWait == 0 {
		o.InFlightWait = o.Visibility + 15*time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.To == dlqURL && dlqURL != "" {
		return nil, fmt.Errorf("inspect: redrive: the destination is the dead-letter queue itself")
	}
	start, err := i.Depth(ctx, dlqURL)
	if err != nil {
		return nil, err
	}
	res := &RedriveResult{Total: start.Visible + start.InFlight, Window: o.Window()}

	var allowed map[string]string
	if o.To == "" {
		sources, err := i.DeadLetterSources(ctx, dlqURL)
		if err == nil && o.Source == "" && len(sources) == 1 {
			o.Source = sources[0]
		}
		allowed = destinations(append(append(sources, o.Source), o.Sources...))
		if len(allowed) == 0 && err != nil {
			return nil, fmt.Errorf("inspect: redrive: no trusted destination (set To or Sources): %w", err)
		}
	}

	method := o.Method
	if method == RedriveAuto {
		if !o.Filter.zero() {
			method = RedriveManual
			res.FallbackReason = "filters need the manual move"
		} else {
			method = RedriveNative
		}
	}
	if method == RedriveNative {
		res.Method = RedriveNative
		err := i.redriveNative(ctx, start, &o, res)
		if err == nil || o.Method == RedriveNative || !errors.Is(err, ErrNativeUnsupported) {
			return res, err
		}
		res.FallbackReason = err.Error()
		res.TaskHandle = ""
		method = RedriveManual
	}
	if method != RedriveManual {
		return nil, fmt.Errorf("inspect: unknown redrive method %q", method)
	}
	res.Method = RedriveManual
	m := &mover{
		i: i, dlq: dlqURL, o: o, res: res, allowed: allowed,
		visSeconds: max(int32(o.Visibility.Round(time.Second)/time.Second), 1),
		sent:       map[string]bool{}, claimed: map[string]bool{}, maybeSent: map[string]bool{}, possibleDups: map[string]bool{}, done: map[string]bool{}, movedJobs: map[string]movedJob{},
		held: map[string]heldMsg{}, failed: map[string]bool{}, unconfirmed: map[string]bool{},
		skipped: map[string]bool{}, noDest: map[string]bool{}, returned: map[string]bool{},
	}
	err = m.run(ctx)
	m.finish(ctx)
	return res, err
}

// destinationARN returns the ARN of the queue a native move sends to, or "" to let SQS use each
// message's original source.
func (i *Inspector) destinationARN(ctx context.Context, o *RedriveOptions) (string, error) {
	u := o.To
	if u == "" {
		u = o.Source
	}
	if u == "" {
		return "", nil
	}
	s, err := i.Depth(ctx, u)
	if err != nil {
		return "", err
	}
	return s.ARN, nil
}

func (i *Inspector) redriveNative(ctx context.Context, dlq QueueStats, o *RedriveOptions, res *RedriveResult) error {
	dest, err := i.destinationARN(ctx, o)
	if err != nil {
		return err
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)}
	if dest != "" {
		in.DestinationArn = aws.String(dest)
	}
	if o.MaxPerSecond > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(o.MaxPerSecond)
	}
	// No retries: an endpoint without the action answers 5xx, and retrying that only wastes time.
	out, err := i.sqs.StartMessageMoveTask(ctx, in, func(so *sqs.Options) { so.RetryMaxAttempts = 1 })
	if err != nil {
		if unsupported(err) {
			return fmt.Errorf("%w (%s)", ErrNativeUnsupported, shortError(err))
		}
		return fmt.Errorf("inspect: start message move task: %w", err)
	}
	res.TaskHandle = aws.ToString(out.TaskHandle)
	t := time.NewTicker(o.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("inspect: stopped following move task %s (it goes on in SQS): %w", res.TaskHandle, ctx.Err())
		case <-t.C:
		}
		ls, err := i.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlq.ARN), MaxResults: aws.Int32(1)})
		if err != nil {
			return fmt.Errorf("inspect: list message move tasks: %w", err)
		}
		if len(ls.Results) == 0 {
			continue
		}
		r := ls.Results[0] // the most recent task of this source
		if h := aws.ToString(r.TaskHandle); h != "" && h != res.TaskHandle {
			continue
		}
		res.Moved = r.ApproximateNumberOfMessagesMoved
		if r.ApproximateNumberOfMessagesToMove != nil {
			res.Total = *r.ApproximateNumberOfMessagesToMove
		}
		if o.Progress != nil {
			o.Progress(RedriveProgress{Method: RedriveNative, Total: res.Total, Moved: res.Moved})
		}
		switch status := aws.ToString(r.Status); status {
		case "COMPLETED":
			return nil
		case "FAILED", "CANCELLED":
			return fmt.Errorf("inspect: move task %s %s: %s", res.TaskHandle, strings.ToLower(status), aws.ToString(r.FailureReason))
		}
	}
}

// unsupported reports whether err says the endpoint does not implement the action (rather than
// refusing this call): an "unsupported/unknown action" error code, 404/405/501, or a 5xx whose body
// is not an AWS error document at all.
func unsupported(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAction",
			"UnknownOperation", "UnknownOperationException", "NotImplemented", "NotImplementedException":
			return true
		}
		return false
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch c := re.HTTPStatusCode(); {
		case c == 404, c == 405, c == 501:
			return true
		case c >= 500:
			return true // not an AWS error document: not an SQS implementation of the action
		}
	}
	return false
}

// ambiguous reports whether a failed call may nevertheless have been carried out: no answer came
// (a connection error or timeout), a 5xx, or a 2xx whose body could not be read (the endpoint did
// it; the connection failed while the answer was being read — aws-sdk-go-v2 retries such a call,
// "use of closed network connection" after StatusCode 200 being the usual form). Only a 4xx
// answer means it was refused.
func ambiguous(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		c := re.HTTPStatusCode()
		return c < 400 || c >= 500
	}
	return true
}

// shortError renders an AWS error in a few words: the error code and message, or the HTTP status
// when the answer was not an AWS error document.
func shortError(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode() + ": " + ae.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return "HTTP " + strconv.Itoa(re.HTTPStatusCode())
	}
	return err.Error()
}

// movedJob records a job this run sent back to its queue.
type movedJob struct {
	messageID string
	at        time.Time
}

// returnSlack allows for the clock difference between this machine and SQS's SentTimestamp.
const returnSlack = 5 * time.Second

// cameBack reports whether j is a job this run already moved that failed again and was
// dead-lettered anew while the run goes on (a new DLQ message, sent after the move). An older
// DLQ message of the same job — the job was dead-lettered twice before — is not: it moves too.
func (m *mover) cameBack(j *DeadJob) bool {
	if j.JobID == "" {
		return false
	}
	mj, ok := m.movedJobs[j.JobID]
	return ok && mj.messageID != j.MessageID && !j.SentAt.Before(mj.at.Add(-returnSlack))
}

type heldMsg struct {
	receipt string
	until   time.Time
}

// mover is one manual redrive.
type mover struct {
	i          *Inspector
	dlq        string
	o          RedriveOptions
	res        *RedriveResult
	allowed    map[string]string // queueKey → trusted URL of the queues a message may name
	visSeconds int32

	mu           sync.Mutex
	sent         map[string]bool     // DLQ message ids sent in this run
	claimed      map[string]bool     // DLQ message ids a worker is sending right now
	maybeSent    map[string]bool     // a send failed without a clear answer: it may have gone through
	possibleDups map[string]bool     // sent, and possibly twice (RedriveResult.PossibleDuplicates)
	done         map[string]bool     // DLQ message ids sent and deleted
	movedJobs    map[string]movedJob // job id → when and from which DLQ message this run moved it
	held         map[string]heldMsg  // messages left in the DLQ, hidden until the run ends
	failed       map[string]bool     // sends that failed (and have not succeeded since)
	unconfirmed  map[string]bool     // sent, delete failed
	skipped      map[string]bool
	noDest       map[string]bool
	returned     map[string]bool
	inFlight     int

	progressMu sync.Mutex
}

func (m *mover) run(ctx context.Context) error {
	var waitUntil time.Time
	for {
		if err := m.pass(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The workers found the DLQ empty. Messages may still be in flight on it — an interrupted
		// run's, a listing's, or this run's own failed sends and deletes: wait for them to come back.
		d, err := m.i.Depth(ctx, m.dlq)
		if err != nil {
			return err
		}
		now := m.i.now()
		ours := int64(0)
		m.mu.Lock()
		for _, h := range m.held {
			if h.until.After(now) {
				ours++
			}
		}
		m.mu.Unlock()
		others := max(d.InFlight-ours, 0)
		if d.Visible == 0 && others == 0 {
			return nil
		}
		if waitUntil.IsZero() {
			waitUntil = now.Add(max(m.o.InFlightWait, 0))
		}
		if !now.Before(waitUntil) {
			m.res.LeftInFlight = others
			return nil
		}
		if d.Visible == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
}

// pass runs the workers until each finds the DLQ empty.
func (m *mover) pass(ctx context.Context) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range m.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.work(wctx); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(wctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func (m *mover) work(ctx context.Context) error {
	for ctx.Err() == nil {
		out, err := m.i.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(m.dlq),
			MaxNumberOfMessages:         redriveBatch,
			VisibilityTimeout:           m.visSeconds,
			WaitTimeSeconds:             1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("inspect: redrive: receive from %s: %w", m.dlq, err)
		}
		if len(out.Messages) == 0 {
			return nil
		}
		// The batch runs to its end even if ctx is cancelled now: sent messages get deleted.
		m.move(context.WithoutCancel(ctx), out.Messages)
	}
	return nil
}

type moveItem struct {
	msg sqstypes.Message
	job DeadJob
}

// destination returns the queue URL a dead job goes to, or "" when it has no valid one.
func (m *mover) destination(j *DeadJob) string {
	switch {
	case m.o.To != "":
		return m.o.To
	case j.SourceQueue != "":
		return m.allowed[queueKey(j.SourceQueue)] // "" unless a trusted queue
	default:
		return m.o.Source
	}
}

// destinations indexes trusted queue URLs by queueKey; empty and unreadable URLs are left out.
func destinations(urls []string) map[string]string {
	out := map[string]string{}
	for _, u := range urls {
		if k := queueKey(u); k != "" {
			if _, dup := out[k]; !dup {
				out[k] = u
			}
		}
	}
	return out
}

// queueKey identifies a queue by the last two segments of its URL's path, "<account>/<name>":
// one queue has several URL spellings (an emulator answers with its own host, LocalStack can
// put the region in the path), and a trusted source queue is in the DLQ's region anyway.
// It returns "" for what is not a queue URL.
func queueKey(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) < 2 {
		return ""
	}
	account, name := segs[len(segs)-2], segs[len(segs)-1]
	if account == "" || name == "" {
		return ""
	}
	return account + "/" + name
}

func (m *mover) hold(msg sqstypes.Message, set map[string]bool) {
	id := aws.ToString(msg.MessageId)
	m.held[id] = heldMsg{receipt: aws.ToString(msg.ReceiptHandle), until: m.i.now().Add(time.Duration(m.visSeconds) * time.Second)}
	set[id] = true
}

// move sends a received batch to its queues and deletes what was sent.
func (m *mover) move(ctx context.Context, msgs []sqstypes.Message) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(m.visSeconds)*time.Second+30*time.Second)
	defer cancel()
	var toDelete []sqstypes.Message
	byDest := map[string][]moveItem{}
	var order []string

	m.mu.Lock()
	for _, msg := range msgs {
		j := ParseDeadJob(msg)
		switch {
		case m.sent[j.MessageID]:
			// Sent earlier in this run, its delete failed or came too late: delete, do not resend.
			toDelete = append(toDelete, msg)
		case m.claimed[j.MessageID]:
			// Another worker is sending it right now (its visibility ran out under that worker):
			// leave it; it comes back after Visibility if that worker's delete does not stick.
			continue
		case m.cameBack(&j):
			m.hold(msg, m.returned)
		case !m.o.Filter.Match(&j):
			m.hold(msg, m.skipped)
		default:
			d := m.destination(&j)
			if d == "" || d == m.dlq {
				m.hold(msg, m.noDest)
				continue
			}
			if _, ok := byDest[d]; !ok {
				order = append(order, d)
			}
			m.claimed[j.MessageID] = true
			byDest[d] = append(byDest[d], moveItem{msg: msg, job: j})
		}
	}
	for _, items := range byDest {
		m.inFlight += len(items)
	}
	m.mu.Unlock()

	for _, d := range order {
		items := byDest[d]
		for _, chunk := range chunkBySize(items) {
			sent := m.send(ctx, d, chunk)
			toDelete = append(toDelete, sent...)
		}
	}
	m.delete(ctx, toDelete)

	m.mu.Lock()
	for _, items := range byDest {
		m.inFlight -= len(items)
		for _, it := range items {
			delete(m.claimed, it.job.MessageID)
		}
	}
	m.mu.Unlock()
	m.progress()
}

func chunkBySize(items []moveItem) [][]moveItem {
	var chunks [][]moveItem
	var cur []moveItem
	size := 0
	for _, it := range items {
		s := len(it.job.Body)
		for k, v := range it.job.Attributes {
			s += len(k) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
		}
		if len(cur) > 0 && (len(cur) == redriveBatch || size+s > batchBytes) {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, it)
		size += s
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// send sends one chunk to queueURL and returns the messages that were sent.
func (m *mover) send(ctx context.Context, queueURL string, items []moveItem) []sqstypes.Message {
	fifo := strings.HasSuffix(queueURL, ".fifo")
	entries := make([]sqstypes.SendMessageBatchRequestEntry, len(items))
	for n, it := range items {
		e := sqstypes.SendMessageBatchRequestEntry{
			Id:                aws.String("e" + strconv.Itoa(n)),
			MessageBody:       aws.String(it.job.Body),
			MessageAttributes: it.job.Attributes,
		}
		if fifo {
			g := it.job.GroupID
			if g == "" {
				g = "jobkit-redrive"
			}
			e.MessageGroupId = aws.String(g)
			e.MessageDeduplicationId = aws.String(RedriveDeduplicationID(it.job.JobID, it.job.MessageID))
		}
		entries[n] = e
	}
	out, err := m.i.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries})
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		for _, it := range items {
			m.failed[it.job.MessageID] = true
			if ambiguous(err) {
				m.maybeSent[it.job.MessageID] = true
			}
		}
		return nil
	}
	// A call that succeeded only after an attempt without an answer (the SDK retried it) may
	// have been carried out twice by the endpoint.
	retried := false
	if ar, ok := retry.GetAttemptResults(out.ResultMetadata); ok {
		for _, r := range ar.Results {
			if r.Err != nil && ambiguous(r.Err) {
				retried = true
			}
		}
	}
	var sent []sqstypes.Message
	for _, s := range out.Successful {
		n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(s.Id), "e"))
		if err != nil || n < 0 || n >= len(items) {
			continue
		}
		it := items[n]
		m.sent[it.job.MessageID] = true
		delete(m.failed, it.job.MessageID)
		if retried || m.maybeSent[it.job.MessageID] {
			m.possibleDups[it.job.MessageID] = true
		}
		if it.job.JobID != "" {
			m.movedJobs[it.job.JobID] = movedJob{messageID: it.job.MessageID, at: m.i.now()}
		}
		sent = append(sent, it.msg)
	}
	for _, f := range out.Failed {
		if n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(f.Id), "e")); err == nil && n >= 0 && n < len(items) {
			m.failed[items[n].job.MessageID] = true
		}
	}
	return sent
}

// delete deletes sent messages from the DLQ.
func (m *mover) delete(ctx context.Context, msgs []sqstypes.Message) {
	for start := 0; start < len(msgs); start += redriveBatch {
		batch := msgs[start:min(start+redriveBatch, len(msgs))]
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(batch))
		for n, msg := range batch {
			entries[n] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String("d" + strconv.Itoa(n)), ReceiptHandle: msg.ReceiptHandle}
		}
		out, err := m.i.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.dlq), Entries: entries})
		m.mu.Lock()
		if err != nil {
			for _, msg := range batch {
				m.unconfirmed[aws.ToString(msg.MessageId)] = true
			}
			m.mu.Unlock()
			continue
		}
		for _, s := range out.Successful {
			if n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(s.Id), "d")); err == nil && n >= 0 && n < len(batch) {
				id := aws.ToString(batch[n].MessageId)
				m.done[id] = true
				delete(m.unconfirmed, id)
			}
		}
		for _, f := range out.Failed {
			if n, err := strconv.Atoi(strings.TrimPrefix(aws.ToString(f.Id), "d")); err == nil && n >= 0 && n < len(batch) {
				m.unconfirmed[aws.ToString(batch[n].MessageId)] = true
			}
		}
		m.mu.Unlock()
	}
}

func (m *mover) snapshot() RedriveProgress {
	m.mu.Lock()
	defer m.mu.Unlock()
	return RedriveProgress{
		Method:   RedriveManual,
		Total:    m.res.Total,
		Moved:    int64(len(m.done)),
		Skipped:  int64(len(m.skipped) + len(m.noDest) + len(m.returned)),
		Failed:   int64(len(m.failed)),
		InFlight: m.inFlight,
	}
}

func (m *mover) progress() {
	if m.o.Progress == nil {
		return
	}
	m.progressMu.Lock()
	defer m.progressMu.Unlock()
	m.o.Progress(m.snapshot())
}

// finish hands back the messages left in the DLQ and fills the result.
func (m *mover) finish(ctx context.Context) {
	m.mu.Lock()
	msgs := make([]sqstypes.Message, 0, len(m.held))
	for id, h := range m.held {
		msgs = append(msgs, sqstypes.Message{MessageId: aws.String(id), ReceiptHandle: aws.String(h.receipt)})
	}
	r := m.res
	r.Moved = int64(len(m.done))
	r.Skipped = int64(len(m.skipped))
	r.NoDestination = int64(len(m.noDest))
	r.Returned = int64(len(m.returned))
	r.Failed = int64(len(m.failed))
	r.Unconfirmed = int64(len(m.unconfirmed))
	r.PossibleDuplicates = int64(len(m.possibleDups))
	m.mu.Unlock()
	m.i.release(ctx, m.dlq, msgs)
	m.progress()
}

// RedriveDeduplicationID is the FIFO deduplication id a manual redrive gives the message: stable
// for one dead message (so a second send of it is dropped by SQS), different from the job id (the
// producer's deduplication id, so SQS does not drop the redriven job as a repeat of its enqueue).
func RedriveDeduplicationID(jobID, dlqMessageID string) string {
	id := jobID + ":redrive:" + dlqMessageID
	if jobID == "" || len(id) > 128 || !printableASCII(id) {
		sum := sha256.Sum256([]byte(jobID + "\x00" + dlqMessageID))
		return "redrive-" + hex.EncodeToString(sum[:])
	}
	return id
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 33 || s[i] > 126 {
			return false
		}
	}
	return true
}
