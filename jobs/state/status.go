package state

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// get reads item k, consistently: nil when there is none.
func (t *Table) get(ctx context.Context, k string) (map[string]types.AttributeValue, error) {
	out, err := t.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.name), Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("state: read %q: %w", k, err)
	}
	return out.Item, nil
}

// JobStatus implements jobs.StateStore: it reads the job's item and, when it names one, its
// idempotency record, and returns the later state (a completed record is final). The progress a
// job reported is shown while it runs.
func (t *Table) JobStatus(ctx context.Context, id string) (jobs.JobStatus, error) {
	st, err := t.jobStatus(ctx, id)
	return withoutStaleProgress(st), err
}

// withoutStaleProgress drops the progress a job reported in a run that has ended.
func withoutStaleProgress(st jobs.JobStatus) jobs.JobStatus {
	if p := st.Progress; p != nil && (st.State != jobs.StateRunning || p.At.Before(st.Since)) {
		st.Progress = nil
	}
	return st
}

// jobItem reads job id's item and the status it holds, or an error wrapping jobs.ErrJobNotFound.
func (t *Table) jobItem(ctx context.Context, id string) (map[string]types.AttributeValue, jobs.JobStatus, error) {
	item, err := t.get(ctx, PrefixJob+id)
	if err != nil {
		return nil, jobs.JobStatus{}, err
	}
	if item == nil {
		return nil, jobs.JobStatus{}, fmt.Errorf("%w: %q", jobs.ErrJobNotFound, id)
	}
	return item, statusOf(id, item), nil
}

func (t *Table) jobStatus(ctx context.Context, id string) (jobs.JobStatus, error) {
	item, st, err := t.jobItem(ctx, id)
	if err != nil {
		return st, err
	}
	ik := str(item, attrIdemKey)
	if ik == "" || final(st.State) {
		return st, nil
	}
	recItem, err := t.get(ctx, ik)
	if err != nil || recItem == nil {
		return st, err
	}
	rec, err := idempotency.RecordFromItem(recItem)
	if err != nil {
		return st, err
	}
	return resolved(id, item, rec, t.o.Now()), nil
}

// final reports whether a job item's state is final whatever its idempotency record says: dead
// or cancelled (a record that succeeded later is a redriven run's, shown once it records it).
func final(st jobs.JobState) bool { return st == jobs.StateDead || st == jobs.StateCancelled }

// resolved is job id's state from its job item and its idempotency record (nil: none), as
// JobStatus and List show it: the later of the two, a completed record final, the item's dead
// or cancelled final.
func resolved(id string, item map[string]types.AttributeValue, rec *idempotency.Record, now time.Time) jobs.JobStatus {
	st := statusOf(id, item)
	if rec != nil && rec.JobID != "" && !final(st.State) {
		merge(&st, rec, now)
	}
	return st
}

// merge folds the job's idempotency record into its state from the job item.
func merge(st *jobs.JobStatus, rec *idempotency.Record, now time.Time) {
	switch {
	case rec.Status == idempotency.StatusCancelled && rec.Live(now) && (st.State == jobs.StateEnqueued || st.State == jobs.StateRetrying):
		// Cancelled (the state of this job's cancel not recorded yet), or a job sharing its
		// idempotency key with the one cancelled: it will not run.
		st.State, st.Since, st.FinishedAt, st.NextAttemptAt = jobs.StateCancelled, rec.StartedAt, rec.StartedAt, time.Time{}
		st.Reason = contract.ReasonCancelled
		if rec.JobID != st.ID {
			st.DuplicateOf = rec.JobID
		}
	case rec.Status == idempotency.StatusCompleted && rec.JobID == st.ID:
		st.State, st.Attempt = jobs.StateSucceeded, rec.Attempt
		st.Since, st.FinishedAt = rec.FinishedAt, rec.FinishedAt
		st.Result, st.NextAttemptAt, st.LastError = rec.Data, time.Time{}, ""
	case rec.Status == idempotency.StatusCompleted && (st.State == jobs.StateEnqueued || st.State == jobs.StateRetrying):
		// Another job with the same idempotency key succeeded: this one is skipped as its duplicate.
		st.State, st.DuplicateOf, st.FinishedAt, st.NextAttemptAt = jobs.StateSucceeded, rec.JobID, rec.FinishedAt, time.Time{}
		st.Since = rec.FinishedAt
	case rec.Status == idempotency.StatusInProgress && rec.JobID == st.ID && rec.Live(now) &&
		!rec.StartedAt.Before(st.Since) && st.State != jobs.StateSucceeded:
		st.State, st.Attempt, st.Since, st.NextAttemptAt = jobs.StateRunning, rec.Attempt, rec.StartedAt, time.Time{}
	}
}

func statusOf(id string, item map[string]types.AttributeValue) jobs.JobStatus {
	st := jobs.JobStatus{
		ID: id, Kind: str(item, attrKind), State: jobs.JobState(str(item, attrState)), Queue: str(item, attrQueue),
		Batch: str(item, attrBatch), Attempt: int(num(item, attrAttempt)),
		EnqueuedAt: msTime(item, attrEnqueuedAt), DeliverAt: msTime(item, attrDeliverAt), Since: msTime(item, attrSince),
		NextAttemptAt: msTime(item, attrNextAttempt), FinishedAt: msTime(item, attrFinishedAt),
		LastError: str(item, attrLastError), Reason: str(item, attrReason), Receipt: str(item, attrReceipt),
	}
	if r := str(item, attrResult); r != "" {
		st.Result = []byte(r)
	}
	if at := msTime(item, attrProgressAt); !at.IsZero() {
		st.Progress = &jobs.Progress{Percent: float(item, attrProgress), Note: str(item, attrProgressNote), At: at}
	}
	return st
}

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		if i, err := strconv.ParseInt(v.Value, 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(v.Value, 64); err == nil {
			return int64(f)
		}
	}
	return 0
}

func float(item map[string]types.AttributeValue, name string) float64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		f, _ := strconv.ParseFloat(v.Value, 64)
		return f
	}
	return 0
}

func boolean(item map[string]types.AttributeValue, name string) bool {
	v, ok := item[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

func msTime(item map[string]types.AttributeValue, name string) time.Time {
	if v := num(item, name); v > 0 {
		return time.UnixMilli(v).UTC()
	}
	return time.Time{}
}
