package inspect

import (
	"cmp"
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
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

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

// newMover returns the manual move of dlq's messages with options o, reporting into res.
func newMover(i *Inspector, dlq string, o RedriveOptions, res *RedriveResult, allowed map[string]string) *mover {
	return &mover{
		i: i, dlq: dlq, o: o, res: res, allowed: allowed,
		visSeconds: max(int32(o.Visibility.Round(time.Second)/time.Second), 1),
		sent:       map[string]bool{}, claimed: map[string]bool{}, maybeSent: map[string]bool{}, possibleDups: map[string]bool{}, done: map[string]bool{}, movedJobs: map[string]movedJob{},
		held: map[string]heldMsg{}, failed: map[string]bool{}, unconfirmed: map[string]bool{},
		skipped: map[string]bool{}, noDest: map[string]bool{}, returned: map[string]bool{},
	}
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
		wg.Go(func() {
			if err := m.work(wctx); err != nil {
				cancel(err)
			}
		})
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
			g = cmp.Or(g, "jobkit-redrive")
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
