package jobs_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs"
)

// Jobs over SQS's 1 MiB (the claim check): the Client stores the envelope in S3 and sends a
// pointer in the format of AWS's SQS extended clients; the worker reads it back (Config.S3, which
// ConfigFromEnv sets) and deletes the object once the job succeeded. The bucket is the infra
// PayloadBucket construct's, which grants the workers it is given.
func ExamplePayloads() {
	ctx := context.Background()
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	client, err := jobs.NewClient(sqs.NewFromConfig(awsCfg), jobs.ClientOptions{
		DefaultQueueURL: os.Getenv("EMAIL_QUEUE_URL"), // output JobkitQueueEmail
		Payloads: &jobs.Payloads{
			S3:     jobs.NewPayloadS3Client(awsCfg),
			Bucket: os.Getenv("PAYLOAD_BUCKET"), // output JobkitPayloadBucketJobs
		},
	})
	if err != nil {
		panic(err)
	}
	newsletter := samplejobs.SendEmail{To: "list@example.com", Subject: "November", Body: strings.Repeat("<p>news</p>", 400_000)}
	res, err := client.Enqueue(ctx, newsletter, nil) // 4.4 MB: stored in S3, the message is a pointer
	if err != nil {
		panic(err) // without Payloads: a *jobs.InvalidJobError wrapping jobs.ErrBodyTooLarge
	}
	fmt.Println("enqueued", res.ID)
}

// A claim-check pointer as the extended clients (and jobkit) write it.
func ExampleParsePayloadPointer() {
	body := `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"payloads","s3Key":"jobs/01JD3Q7X2V"}]`
	ptr, ok := jobs.ParsePayloadPointer(body)
	fmt.Println(ok, ptr.Bucket, ptr.Key)
	_, ok = jobs.ParsePayloadPointer(`{"v":1,"id":"01JD3Q7X2V","kind":"email.send","args":{}}`)
	fmt.Println(ok)
	// Output:
	// true payloads jobs/01JD3Q7X2V
	// false
}
