package instrument

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/jobkit-go/jobkit/idempotency"
	"github.com/jobkit-go/jobkit/jobs"
)

// EnvEffectsTable names a DynamoDB table (partition key "id", string) in which the instrumented
// sample functions record what each job did, so that a fault-injection run can count from real state how
// many times each job's effect was applied and each job's body started. Unset (the default),
// nothing is recorded.
const EnvEffectsTable = "EFFECTS_TABLE"

// EnvNoRateLimit, set to "1" on the instrumented email function, leaves out its rate limit
// (samplejobs.EmailRateLimits): make chaos's 10,000 jobs measure loss and duplication, which
// snoozes for tokens would only slow past its time bound on one emulator.
const EnvNoRateLimit = "JOBKIT_SAMPLE_NO_RATE_LIMIT"

// EnvSampleMailer, set to "1" on the instrumented email function, sends with the sample's own
// mailer (samplejobs.LogMailer) instead of KeyedMailer, whose two writes a send stand for a
// provider's idempotency and are no part of the kit: for the benchmarks that count the kit's
// requests and time (the e2e and cost runs).
const EnvSampleMailer = "JOBKIT_SAMPLE_MAILER"

// Attribute names of an effects item (one per job id).
const (
	EffectsIDAttr      = "id"      // partition key: the job id
	EffectsAppliedAttr = "applied" // number: times the job's effect was committed
	EffectsStartedAttr = "started" // number: times the job's body started
)

// EffectsAPI is the part of the DynamoDB client Effects calls.
type EffectsAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// EffectsReader is the part of the DynamoDB client ReadEffects calls.
type EffectsReader interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var (
	_ EffectsAPI    = (*dynamodb.Client)(nil)
	_ EffectsReader = (*dynamodb.Client)(nil)
)

// Effects records the sample jobs' effects in a DynamoDB table (EnvEffectsTable); see
// Middleware. A nil *Effects records nothing.
type Effects struct {
	// Table is the effects table.
	Table string
	// DB makes the calls Effects makes itself (Started, Finished). Applied writes go through
	// the job's idempotency transaction.
	DB EffectsAPI
	// CountStarts counts each start of a body run behind idempotency too (Started, a write of its
	// own): the transcode sample's, whose long job must start exactly once.
	CountStarts bool
}

// EffectsFromEnv returns the Effects EnvEffectsTable asks for, calling db, or nil when it is unset.
func EffectsFromEnv(db EffectsAPI) *Effects {
	table := os.Getenv(EnvEffectsTable)
	if table == "" {
		return nil
	}
	return &Effects{Table: table, DB: db}
}

// Applied returns the transaction item that counts one application of job jobID's effect, for
// the transaction that completes the job's idempotency record (idempotency.OnComplete).
func (e *Effects) Applied(jobID string) types.TransactWriteItem {
	return types.TransactWriteItem{Update: e.increment(jobID, EffectsAppliedAttr)}
}

// Started counts one start of job jobID's body. It is not part of any transaction: a start is
// an event, not an effect, and is counted even when the job then fails.
func (e *Effects) Started(ctx context.Context, jobID string) error {
	return e.add(ctx, jobID, EffectsStartedAttr)
}

// Middleware returns the middleware that counts what each job did in e's table:
//
//   - a job run behind idempotency.Middleware (put this middleware inside it) counts
//     "applied += 1" in the transaction that completes its idempotency record
//     (idempotency.OnComplete) — with the worker's own business writes when the worker calls
//     idempotency.TransactWrite — so the count is exactly the number of times the job's effect
//     took place: 1 for a job that ran, however often it was delivered;
//   - with CountStarts, such a job also counts "started += 1" before its worker runs;
//   - a job without an idempotency claim counts "started += 1" before its worker runs and "applied += 1" after the worker succeeds, each a write of its own (see
//     Started and Finished).
//
// A nil *Effects returns a middleware that counts nothing.
func (e *Effects) Middleware() jobs.Middleware {
	return func(next jobs.Handler) jobs.Handler {
		if e == nil {
			return next
		}
		return func(ctx context.Context, row *jobs.JobRow) error {
			err := idempotency.OnComplete(ctx, e.Applied(row.ID))
			switch {
			case err == nil && e.CountStarts:
				if err := e.Started(ctx, row.ID); err != nil {
					return err
				}
				return next(ctx, row)
			case err == nil:
				return next(ctx, row)
			case !errors.Is(err, idempotency.ErrNoClaim):
				// A store that cannot write transactions: a wiring error, retrying cannot fix it.
				return jobs.Cancel(fmt.Errorf("instrument: count the effect of job %s: %w", row.ID, err))
			}
			if err := e.Started(ctx, row.ID); err != nil {
				return err
			}
			if err := next(ctx, row); err != nil {
				return err
			}
			return e.Finished(ctx, row.ID)
		}
	}
}

// Finished counts one application of the effect of job jobID for a job that has no
// idempotency record to commit it with (the transcode sample): unlike Applied it is a write of
// its own, so a process that dies between the job's work and this write leaves it uncounted.
func (e *Effects) Finished(ctx context.Context, jobID string) error {
	return e.add(ctx, jobID, EffectsAppliedAttr)
}

func (e *Effects) add(ctx context.Context, jobID, attr string) error {
	if e.DB == nil {
		return errors.New("instrument: Effects.DB is nil")
	}
	u := e.increment(jobID, attr)
	_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if err != nil {
		return fmt.Errorf("instrument: record %s of job %s: %w", attr, jobID, err)
	}
	return nil
}

func (e *Effects) increment(jobID, attr string) *types.Update {
	return &types.Update{
		TableName:                 aws.String(e.Table),
		Key:                       map[string]types.AttributeValue{EffectsIDAttr: &types.AttributeValueMemberS{Value: jobID}},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}
}

// EffectCount is what the effects table holds for one job.
type EffectCount struct {
	Applied int // times the job's effect was committed
	Started int // times the job's body started (jobs that record starts)
}

// ReadEffects reads the whole effects table (a consistent scan) and returns each job's counts.
func ReadEffects(ctx context.Context, db EffectsReader, table string) (map[string]EffectCount, error) {
	out := map[string]EffectCount{}
	var start map[string]types.AttributeValue
	for {
		page, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, fmt.Errorf("instrument: read effects: %w", err)
		}
		for _, item := range page.Items {
			id, ok := item[EffectsIDAttr].(*types.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("instrument: read effects: an item of %s has no string %q", table, EffectsIDAttr)
			}
			var c EffectCount
			for attr, dst := range map[string]*int{EffectsAppliedAttr: &c.Applied, EffectsStartedAttr: &c.Started} {
				if n, ok := item[attr].(*types.AttributeValueMemberN); ok {
					v, err := strconv.Atoi(n.Value)
					if err != nil {
						return nil, fmt.Errorf("instrument: read effects: job %s: %s=%q: %w", id.Value, attr, n.Value, err)
					}
					*dst = v
				}
			}
			out[id.Value] = c
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = page.LastEvaluatedKey
	}
}
