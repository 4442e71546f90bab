package emulator

import (
	"cmp"
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/middleware"

	"github.com/jobkit-go/jobkit/jobs/sdkfix"
)

// Config is the AWS configuration of the jobkit tools that talk to an emulator at endpoint: the
// region given, else AWS_REGION, AWS_DEFAULT_REGION or us-east-1; the emulator's test credentials
// unless the environment names others (AWS_ACCESS_KEY_ID, AWS_PROFILE); and sdkfix.NoBodyWriteTo,
// which a fast local server needs.
func Config(ctx context.Context, endpoint, region string) (aws.Config, error) {
	region = cmp.Or(region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), "us-east-1")
	opts := []func(*config.LoadOptions) error{
		config.WithBaseEndpoint(endpoint), config.WithRegion(region),
		config.WithAPIOptions([]func(*middleware.Stack) error{sdkfix.NoBodyWriteTo}),
	}
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}
