package awstest

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Client returns an S3 client for cfg: path-style addresses when cfg has an endpoint (the
// emulators serve buckets as paths, not host names).
func S3Client(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if cfg.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
	})
}

// CreateBucket creates a bucket named for the test (lower case, as S3 requires) and deletes it,
// with whatever objects are left in it, when the test ends.
func CreateBucket(tb testing.TB, cfg aws.Config, suffix string) string {
	tb.Helper()
	client := S3Client(cfg)
	name := strings.ToLower(Name(tb, suffix))
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("awstest: create bucket %s: %v", name, err)
	}
	Cleanup(tb, "bucket "+name, func(ctx context.Context) error {
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, o := range page.Contents {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
					return err
				}
			}
		}
		_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
		return err
	})
	return name
}
