package awstest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// What serves the endpoint, as Emulator reports it.
const (
	EmulatorMoto       = "moto"
	EmulatorLocalStack = "localstack"
)

// Tests phrase what they expect by capability (HasMessageMoveTasks, HasCloudWatch: what AWS does
// where the feature exists) rather than by emulator; Emulator is for the few places where an
// emulator departs from AWS's documented behaviour, each with a comment saying which.

var (
	emulatorOnce sync.Once
	emulatorName string
)

// Emulator names the emulator behind Endpoint(): EmulatorMoto, EmulatorLocalStack, or "" for AWS
// or an endpoint it does not recognize. It asks once per process: LocalStack answers
// GET /_localstack/health, moto answers GET /moto-api/.
func Emulator() string {
	emulatorOnce.Do(func() {
		ep := strings.TrimRight(Endpoint(), "/")
		if ep == "" {
			return
		}
		client := &http.Client{Timeout: 3 * time.Second}
		answers := func(path string) bool {
			resp, err := client.Get(ep + path)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		switch {
		case answers("/_localstack/health"):
			emulatorName = EmulatorLocalStack
		case answers("/moto-api/"):
			emulatorName = EmulatorMoto
		}
	})
	return emulatorName
}

// probe runs a capability check once per process and remembers its answer (or its error, which
// fails every test that asks).
type probe struct {
	once sync.Once
	val  string
	err  error
}

func (p *probe) get(tb testing.TB, what string, fn func(ctx context.Context, cfg aws.Config) (string, error)) string {
	tb.Helper()
	cfg := Config(tb)
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p.val, p.err = fn(ctx, cfg)
	})
	if p.err != nil {
		tb.Fatalf("awstest: %s: %v", what, p.err)
	}
	return p.val
}

var accountProbe, moveProbe, cloudWatchProbe probe

// Account returns the account id of the endpoint's credentials (STS GetCallerIdentity): the
// account in the ARNs the endpoint makes (moto's 123456789012, LocalStack's 000000000000, or the
// real one).
func Account(tb testing.TB) string {
	tb.Helper()
	return accountProbe.get(tb, "account (sts GetCallerIdentity)", func(ctx context.Context, cfg aws.Config) (string, error) {
		out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.Account), nil
	})
}

// HasMessageMoveTasks reports whether the endpoint implements SQS message move tasks
// (StartMessageMoveTask, ListMessageMoveTasks), as AWS does; moto does not. It lists the move
// tasks of a queue that does not exist: an endpoint with the actions refuses the queue, one
// without them refuses the action.
func HasMessageMoveTasks(tb testing.TB) bool {
	tb.Helper()
	acct := Account(tb)
	return moveProbe.get(tb, "probe ListMessageMoveTasks", func(ctx context.Context, cfg aws.Config) (string, error) {
		_, err := sqs.NewFromConfig(cfg).ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{
			SourceArn: aws.String("arn:aws:sqs:" + cfg.Region + ":" + acct + ":jk-probe-missing-" + randomHex()),
		}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
		if err == nil || !actionMissing(err) {
			return "yes", nil
		}
		return "", nil
	}) == "yes"
}

// HasCloudWatch reports whether the endpoint answers CloudWatch GetMetricData with the client
// jobkit makes for it (inspect.NewCloudWatch: the Query protocol on an emulator, which moto and
// LocalStack serve), as AWS does.
func HasCloudWatch(tb testing.TB) bool {
	tb.Helper()
	return cloudWatchProbe.get(tb, "probe CloudWatch", func(ctx context.Context, cfg aws.Config) (string, error) {
		now := time.Now()
		// The client inspect.NewCloudWatch makes for an emulator (Query protocol), built here:
		// this kit is imported by the tests of packages inspect imports.
		cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
			if cfg.BaseEndpoint != nil {
				o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
			}
		})
		_, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
			StartTime: aws.Time(now.Add(-5 * time.Minute)), EndTime: aws.Time(now),
			MetricDataQueries: []cwtypes.MetricDataQuery{{
				Id: aws.String("q0"),
				MetricStat: &cwtypes.MetricStat{
					Period: aws.Int32(60), Stat: aws.String("Maximum"),
					Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateAgeOfOldestMessage"),
						Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("jk-probe")}}},
				},
			}},
		}, func(o *cloudwatch.Options) { o.RetryMaxAttempts = 1 })
		if err != nil {
			return "", nil
		}
		return "yes", nil
	}) == "yes"
}

// actionMissing reports whether err says the endpoint does not implement the action at all
// (rather than refusing this call): an unknown-operation error code, 404/405/501, or a 5xx.
func actionMissing(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAction",
			"UnknownOperation", "UnknownOperationException", "NotImplemented", "NotImplementedException":
			return true
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		c := re.HTTPStatusCode()
		return c == 404 || c == 405 || c == 501 || c >= 500
	}
	return false
}
