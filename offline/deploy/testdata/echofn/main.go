// Command echofn is the function of the deploy and devstack test assembly. For each SQS record it
// writes an item {id: "echo:<body>", message_id, source, group, env} to JOBKIT_IDEMPOTENCY_TABLE
// and sends the body to OUT_QUEUE_URL, using the environment the offline stack gives it. A record
// whose body is "fail" is reported in batchItemFailures.
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	ddb, q := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	envJSON, _ := json.Marshal(env)
	slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			slog.Info("echo", "message_id", r.MessageId, "body", r.Body)
			if r.Body == "fail" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				continue
			}
			_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(os.Getenv("JOBKIT_IDEMPOTENCY_TABLE")),
				Item: map[string]ddbtypes.AttributeValue{
					"id":         &ddbtypes.AttributeValueMemberS{Value: "echo:" + r.Body},
					"message_id": &ddbtypes.AttributeValueMemberS{Value: r.MessageId},
					"source":     &ddbtypes.AttributeValueMemberS{Value: r.EventSourceARN},
					"group":      &ddbtypes.AttributeValueMemberS{Value: r.Attributes["MessageGroupId"] + "."},
					"env":        &ddbtypes.AttributeValueMemberS{Value: string(envJSON)},
				},
			})
			if err == nil {
				_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(os.Getenv("OUT_QUEUE_URL")), MessageBody: aws.String(r.Body)})
			}
			if err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	})
}
