// Package awstest gives tests an AWS configuration for the endpoint they run against — the offline
// emulator that `make test` starts, LocalStack, or AWS — plus unique resource names and cleanup, so
// integration tests run in parallel and can run again against the same endpoint.
//
// The endpoint comes from AWS_ENDPOINT_URL. When it is unset or does not answer, tests that ask for
// a Config are skipped, unless JOBKIT_REQUIRE_EMULATOR=1 (set by `make test`), which fails them.
// JOBKIT_TEST_REAL_AWS=1 runs them against AWS itself with the default credential chain.
package awstest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/jobkit-go/jobkit/jobs/sdkfix"
	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

// Region is the region tests use unless AWS_REGION says otherwise.
const Region = "us-east-1"

// DefaultEndpoint is the emulator's address (the port LocalStack uses too).
const DefaultEndpoint = "http://127.0.0.1:4566"

// Endpoint returns the endpoint tests target: AWS_ENDPOINT_URL, or "" for real AWS.
func Endpoint() string {
	if os.Getenv("JOBKIT_TEST_REAL_AWS") == "1" {
		return ""
	}
	if e := os.Getenv("AWS_ENDPOINT_URL"); e != "" {
		return e
	}
	return DefaultEndpoint
}

var (
	reachOnce sync.Once
	reachErr  error
)

func reachable(endpoint string) error {
	reachOnce.Do(func() {
		u, err := url.Parse(endpoint)
		if err != nil {
			reachErr = err
			return
		}
		host := u.Host
		if u.Port() == "" {
			if u.Scheme == "https" {
				host += ":443"
			} else {
				host += ":80"
			}
		}
		c, err := net.DialTimeout("tcp", host, 2*time.Second)
		if err != nil {
			reachErr = err
			return
		}
		c.Close()
	})
	return reachErr
}

// Config returns an aws.Config for the test endpoint: us-east-1 (or AWS_REGION), static test
// credentials and the endpoint as the base endpoint of every service client. It works with
// AWS_CA_BUNDLE set because it keeps the SDK's own HTTP client.
func Config(tb testing.TB) aws.Config {
	tb.Helper()
	cfg, err := LoadConfig(context.Background())
	if err != nil {
		tb.Fatalf("awstest: load config: %v", err)
	}
	if ep := Endpoint(); ep != "" {
		if err := reachable(ep); err != nil {
			if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" {
				tb.Fatalf("awstest: endpoint %s does not answer (%v); run `make emulator-up`", ep, err)
			}
			tb.Skipf("awstest: endpoint %s does not answer (%v); run `make emulator-up` or set AWS_ENDPOINT_URL", ep, err)
		}
	}
	return cfg
}

// LoadConfig is Config without a test: the configuration for Endpoint(), for tools and benchmarks.
func LoadConfig(ctx context.Context) (aws.Config, error) {
	region := os.Getenv("AWS_REGION")
	region = cmp.Or(region, Region)
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithAPIOptions([]func(*middleware.Stack) error{sdkfix.NoBodyWriteTo}),
	}
	if ep := Endpoint(); ep != "" {
		opts = append(opts,
			config.WithBaseEndpoint(ep),
			config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
			config.WithRetryer(func() aws.Retryer { return toldRetryer{retry.NewStandard()} }),
		)
	}
	return config.LoadDefaultConfig(ctx, opts...)
}

// toldRetryer is the SDK's standard retryer that says on stderr why it retries a call that did not
// fail on throttling: against an emulator such a retry can repeat a call that already took effect
// (its answer was lost), and a test that then sees the effect twice needs the reason in its log.
type toldRetryer struct{ aws.RetryerV2 }

func (r toldRetryer) IsErrorRetryable(err error) bool {
	ok := r.RetryerV2.IsErrorRetryable(err)
	if ok && !(retry.ThrottleErrorCode{Codes: retry.DefaultThrottleErrorCodes}).IsErrorThrottle(err).Bool() {
		fmt.Fprintf(os.Stderr, "awstest: %s: retrying after: %v\n", time.Now().UTC().Format("15:04:05.000"), err)
	}
	return ok
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// Name returns a resource name unique to this test and run: "jk-<test>-<suffix>-<random>", at most
// 64 characters, made of letters, digits and '-', valid for SQS queues (add ".fifo" for FIFO),
// DynamoDB tables and schedules.
func Name(tb testing.TB, suffix string) string {
	test := unsafeChars.ReplaceAllString(tb.Name(), "-")
	suffix = unsafeChars.ReplaceAllString(suffix, "-")
	random := randomHex()
	max := 64 - len("jk---") - len(suffix) - len(random) - len(".fifo")
	if len(test) > max {
		test = test[len(test)-max:]
	}
	return strings.ReplaceAll("jk-"+test+"-"+suffix+"-"+random, "--", "-")
}

// Prefix returns word, eight random hex digits and a dash: a prefix of a deployment's resource
// names (deploy.Options.Prefix) that no other test's shares.
func Prefix(word string) string { return word + randomHex() + "-" }

// randomHex returns 8 random hex digits.
func randomHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Cleanup registers fn to run when the test ends with a context that has time to finish, and
// reports (without failing the test) if it returns an error.
func Cleanup(tb testing.TB, what string, fn func(ctx context.Context) error) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fn(ctx); err != nil {
			tb.Logf("awstest: cleanup %s: %v", what, err)
		}
	})
}

// DynamoDBLocalConfig returns an aws.Config for DynamoDB Local — AWS's own DynamoDB engine, which
// `make test` starts beside the emulator — at JOBKIT_DYNAMODB_LOCAL_URL. When the variable is
// unset the test is skipped, unless JOBKIT_REQUIRE_EMULATOR=1, which fails it.
func DynamoDBLocalConfig(tb testing.TB) aws.Config {
	tb.Helper()
	ep := os.Getenv("JOBKIT_DYNAMODB_LOCAL_URL")
	if ep == "" {
		const how = "JOBKIT_DYNAMODB_LOCAL_URL is unset; `make test` sets it, or run `./localstack/javaemu.sh up dynamodb` and set it to the URL it prints"
		if os.Getenv("JOBKIT_REQUIRE_EMULATOR") == "1" {
			tb.Fatal("awstest: " + how)
		}
		tb.Skip("awstest: " + how)
	}
	region := os.Getenv("AWS_REGION")
	region = cmp.Or(region, Region)
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion(region),
		config.WithBaseEndpoint(ep),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithAPIOptions([]func(*middleware.Stack) error{sdkfix.NoBodyWriteTo}),
	)
	if err != nil {
		tb.Fatalf("awstest: load config: %v", err)
	}
	return cfg
}

// SQS returns Config(tb) and an SQS client of it: what most emulator tests start with.
func SQS(tb testing.TB) (aws.Config, *sqs.Client) {
	tb.Helper()
	cfg := Config(tb)
	return cfg, sqs.NewFromConfig(cfg)
}

// Proxied returns a copy of cfg whose clients call cfg's endpoint (Endpoint when cfg names none)
// through a fault proxy (faultproxy.Start with opts), closed when the test ends.
func Proxied(tb testing.TB, cfg aws.Config, opts *faultproxy.Options) aws.Config {
	tb.Helper()
	p, err := faultproxy.Start(cmp.Or(aws.ToString(cfg.BaseEndpoint), Endpoint()), opts)
	if err != nil {
		tb.Fatalf("awstest: start the fault proxy: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p.Config(cfg)
}

// onCalls numbers the OnCall options.
var onCalls atomic.Int64

// OnCall returns an API option (for aws.Config.APIOptions, or a client's Options.APIOptions) that
// calls fn with the operation name and input of each call a client makes: once a call, however
// many times the SDK sends it.
func OnCall(fn func(operation string, input any)) func(*middleware.Stack) error {
	id := "awstestOnCall" + strconv.FormatInt(onCalls.Add(1), 10) // a stack keys its steps by id: one of its own
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(id,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				fn(middleware.GetOperationName(ctx), in.Parameters)
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}
