package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// The cli benchmark measures the operator verbs' Inspector work against the endpoint
// (AWS_ENDPOINT_URL: the emulator under `make bench`):
//
//	cli_dlq_list_ms                   ListDead of a 100-job DLQ (receive all, hand all back)
//	cli_redrive_manual_jobs_per_s     manual redrive of 500 dead jobs (receive/send/delete, 4 workers)
//
// On the emulator both are bounded by moto's CPU (one Python process); SQS charges a network round
// trip per batch call instead.
func init() {
	register("cli", 80, benchCLI)
}

const cliRedriveJobs = 500

func benchCLI(ctx context.Context, emit func(string, any)) error {
	cfg, err := awstest.LoadConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	in := inspect.New(cfg)

	dlq, err := cliQueue(ctx, client, "cli-list-dlq")
	if err != nil {
		return err
	}
	defer cliDelete(client, dlq)
	if err := cliSeed(ctx, client, dlq, "", 100); err != nil {
		return err
	}
	start := time.Now()
	list, err := in.ListDead(ctx, dlq, nil)
	if err != nil {
		return err
	}
	if len(list.Jobs) != 100 {
		return fmt.Errorf("listed %d of 100 dead jobs", len(list.Jobs))
	}
	emit("cli_dlq_list_ms", float64(time.Since(start).Microseconds())/1000)

	src, err := cliQueue(ctx, client, "cli-src")
	if err != nil {
		return err
	}
	defer cliDelete(client, src)
	rdlq, err := cliQueue(ctx, client, "cli-redrive-dlq")
	if err != nil {
		return err
	}
	defer cliDelete(client, rdlq)
	if err := cliSeed(ctx, client, rdlq, src, cliRedriveJobs); err != nil {
		return err
	}
	start = time.Now()
	// src is the queue the jobs died on: the one destination the redrive trusts for them.
	res, err := in.Redrive(ctx, rdlq, &inspect.RedriveOptions{Method: inspect.RedriveManual, Source: src})
	if err != nil {
		return err
	}
	if res.Moved != cliRedriveJobs {
		return fmt.Errorf("redrive moved %d of %d", res.Moved, cliRedriveJobs)
	}
	emit("cli_redrive_manual_jobs_per_s", cliRedriveJobs/time.Since(start).Seconds())
	return nil
}

func cliQueue(ctx context.Context, client *sqs.Client, prefix string) (string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "-" + hex.EncodeToString(b[:]))})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

func cliDelete(client *sqs.Client, url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
}

// cliSeed puts n dead jobs in dlq with the runtime's attributes, pointing back at source.
func cliSeed(ctx context.Context, client *sqs.Client, dlq, source string, n int) error {
	for start := 0; start < n; start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for i := start; i < min(start+10, n); i++ {
			id := "bench-" + strconv.Itoa(i)
			body, _ := json.Marshal(jobs.Envelope{V: jobs.EnvelopeVersion, ID: id, Kind: "bench.dead", Args: json.RawMessage(`{}`), EnqueuedAt: time.Now().UTC()})
			attrs := map[string]sqstypes.MessageAttributeValue{
				contract.AttrReason: {DataType: aws.String("String"), StringValue: aws.String(contract.ReasonAttemptsUsed)},
				contract.AttrError:  {DataType: aws.String("String"), StringValue: aws.String("bench: failed")},
				contract.AttrKind:   {DataType: aws.String("String"), StringValue: aws.String("bench.dead")},
				contract.AttrJobID:  {DataType: aws.String("String"), StringValue: aws.String(id)},
			}
			if source != "" {
				attrs[contract.AttrSourceQueue] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(source)}
			}
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i - start)), MessageBody: aws.String(string(body)), MessageAttributes: attrs,
			})
		}
		out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries})
		if err != nil {
			return err
		}
		if len(out.Failed) > 0 {
			return fmt.Errorf("seed: %d entries failed", len(out.Failed))
		}
	}
	return nil
}
