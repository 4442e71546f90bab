// Command rbi is a Lambda function built for the event source mapping's tests: it answers an SQS
// batch with each kind of partial batch response. The first message whose body starts with
// "mode:" chooses the answer:
//
//	mode:null          null                                    (null EventResponse)
//	mode:empty-body    no bytes at all                         (empty EventResponse)
//	mode:empty-object  {}                                      (empty EventResponse)
//	mode:empty-list    {"batchItemFailures":[]}
//	mode:null-list     {"batchItemFailures":null}
//	mode:unknown-id    the failing ids plus an id not in the batch
//	mode:empty-id      {"batchItemFailures":[{"itemIdentifier":""}]}
//	mode:null-id       {"batchItemFailures":[{"itemIdentifier":null}]}
//	mode:bad-key       {"batchItemFailures":[{"itemId":"<a real id>"}]}
//	mode:invalid-json  {not json
//	mode:not-object    "OK"
//	mode:error         a function error
//	mode:timeout       sleep past the deadline, ignoring ctx
//	mode:timeout-first like mode:timeout on a message's first receive, success afterwards
//	mode:echo          the event as aws-lambda-go decoded it
//
// Without a mode, the answer lists the failing messages: bodies "fail", and "fail-once" on a first
// receive. On a FIFO queue, the messages after a failure in the same message group are listed too,
// as a FIFO function must. A body "sleep:N" sleeps N ms first. RBI_INIT=fail makes init fail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func failures(ids ...string) io.Reader {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, id := range ids {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	b, _ := json.Marshal(resp)
	return strings.NewReader(string(b))
}

func handle(ctx context.Context, ev events.SQSEvent) (io.Reader, error) {
	mode := ""
	for _, r := range ev.Records {
		if m, ok := strings.CutPrefix(r.Body, "mode:"); ok {
			mode = m
			break
		}
	}
	for _, r := range ev.Records {
		if ms, ok := strings.CutPrefix(r.Body, "sleep:"); ok {
			n, _ := strconv.Atoi(ms)
			time.Sleep(time.Duration(n) * time.Millisecond)
		}
	}
	switch mode {
	case "null":
		return strings.NewReader("null"), nil
	case "empty-body":
		return strings.NewReader(""), nil
	case "empty-object":
		return strings.NewReader("{}"), nil
	case "empty-list":
		return strings.NewReader(`{"batchItemFailures":[]}`), nil
	case "null-list":
		return strings.NewReader(`{"batchItemFailures":null}`), nil
	case "unknown-id":
		return failures(append(failing(ev), "00000000-0000-0000-0000-000000000000")...), nil
	case "empty-id":
		return failures(""), nil
	case "null-id":
		return strings.NewReader(`{"batchItemFailures":[{"itemIdentifier":null}]}`), nil
	case "bad-key":
		return strings.NewReader(`{"batchItemFailures":[{"itemId":"` + ev.Records[0].MessageId + `"}]}`), nil
	case "invalid-json":
		return strings.NewReader("{not json"), nil
	case "not-object":
		return strings.NewReader(`"OK"`), nil
	case "error":
		return nil, errors.New("rbi: the batch failed")
	case "timeout":
		time.Sleep(time.Hour)
	case "timeout-first":
		for _, r := range ev.Records {
			if r.Attributes["ApproximateReceiveCount"] == "1" {
				time.Sleep(time.Hour)
			}
		}
		return failures(), nil
	case "echo":
		b, err := json.Marshal(ev)
		return strings.NewReader(string(b)), err
	}
	return failures(failing(ev)...), nil
}

// failing lists the messages that fail, and on FIFO the rest of a group after its first failure.
func failing(ev events.SQSEvent) []string {
	var ids []string
	brokenGroups := map[string]bool{}
	for _, r := range ev.Records {
		group := r.Attributes["MessageGroupId"]
		fail := r.Body == "fail" || (r.Body == "fail-once" && r.Attributes["ApproximateReceiveCount"] == "1") ||
			strings.HasPrefix(r.Body, "fail-once:") && r.Attributes["ApproximateReceiveCount"] == "1"
		if group != "" && brokenGroups[group] {
			fail = true
		}
		if fail {
			ids = append(ids, r.MessageId)
			if group != "" {
				brokenGroups[group] = true
			}
		}
	}
	return ids
}

func main() {
	if os.Getenv("RBI_INIT") == "fail" {
		api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
		resp, err := http.Post("http://"+api+"/2018-06-01/runtime/init/error", "application/json",
			strings.NewReader(`{"errorType":"Rbi.InitFailed","errorMessage":"rbi cannot start"}`))
		if err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	}
	lambda.Start(handle)
}
