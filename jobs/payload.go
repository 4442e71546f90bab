package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// Large payloads (the claim check). A job whose envelope does not fit in an SQS message is stored
// whole in S3 and the message body is a pointer to it, in the format of AWS's SQS extended
// clients for Java and Python (payload-offloading-java-common-lib-for-aws):
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"<bucket>","s3Key":"<key>"}]
//
// with the message attribute ExtendedPayloadSize (Number: the envelope's size in bytes). The S3
// object is the envelope JSON, byte for byte what the message body would have been, so everything
// about the job (id, kind, args, key, trace, batch) lives in one place; the runtime reads the
// pointer, fetches the envelope and runs it as if it had come in the body. Consumers built on the
// extended clients read these messages too (they get the envelope as the body), and jobkit's
// runtime reads what those clients send, including the older pointer class
// "com.amazon.sqs.javamessaging.MessageS3Pointer" and attribute SQSLargePayloadSize.

// legacyPayloadPointerClass is the first element in pointers of older extended clients
// (contract.PayloadPointerClass is the current one).
const legacyPayloadPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"

// Errors about large payloads.
var (
	// ErrPayloadDelayed: a job stored in S3 cannot be delayed beyond MaxSQSDelay, since its object
	// could expire (the bucket's lifecycle rule) before the schedule delivers the pointer.
	ErrPayloadDelayed = errors.New("jobs: a job stored in S3 (over the payload threshold) cannot be delayed beyond 15 minutes")
)

// PayloadS3API is the part of the S3 API the claim check calls: the Client puts objects, the
// runtime gets and deletes them. *s3.Client implements it.
type PayloadS3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ PayloadS3API = (*s3.Client)(nil)

// Payloads configures a Client's claim check: envelopes over Threshold bytes are stored in Bucket
// and sent as pointers. The infra JobQueue construct's PayloadBucket makes the bucket.
type Payloads struct {
	// S3 stores the payloads (required); an *s3.Client. Against an emulator, set its
	// UsePathStyle (see NewPayloadS3Client).
	S3 PayloadS3API
	// Bucket is the bucket the payloads go to (required).
	Bucket string
	// Threshold is the largest envelope sent in the message itself, in bytes; a larger one goes
	// to S3. 0 means MaxMessageSize (SQS's 1 MiB); it is lowered to a queue's own smaller
	// MaximumMessageSize (ClientOptions.MaxMessageSizes). Set it lower to keep messages small
	// (256 KiB is the extended clients' default); 0 < Threshold <= MaxMessageSize.
	Threshold int
	// KeyPrefix follows the queue's own prefix in every object key: a payload of a job for queue
	// q is stored at contract.PayloadKeyPrefix(q) + KeyPrefix + a new ULID, e.g.
	// "Email/jobs/01JD3Q7X2V…" for KeyPrefix "jobs/". A worker reads only its own queue's keys.
	KeyPrefix string
}

func (p *Payloads) validate() error {
	switch {
	case p.S3 == nil:
		return errors.New("jobs: NewClient: Payloads.S3 is nil")
	case p.Bucket == "":
		return errors.New("jobs: NewClient: Payloads.Bucket is empty")
	case p.Threshold < 0 || p.Threshold > MaxMessageSize:
		return fmt.Errorf("jobs: NewClient: Payloads.Threshold %d: want 1 to %d (0 means %d)", p.Threshold, MaxMessageSize, MaxMessageSize)
	}
	return nil
}

// NewPayloadS3Client returns the S3 client for payloads from cfg: path-style addressing when cfg
// has a BaseEndpoint (an emulator serves buckets as paths, not host names), and no log line for
// each object read without a checksum to validate (objects are put without one).
func NewPayloadS3Client(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if cfg.BaseEndpoint != nil {
			o.UsePathStyle = true
		}
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// PayloadPointer names the S3 object holding a job's envelope.
type PayloadPointer struct {
	Bucket string
	Key    string
}

// Body returns the message body of the pointer, as the Java extended client writes it.
func (p PayloadPointer) Body() string {
	b, _ := json.Marshal([]any{contract.PayloadPointerClass, struct {
		Bucket string `json:"s3BucketName"`
		Key    string `json:"s3Key"`
	}{p.Bucket, p.Key}}) // strings always encode
	return string(b)
}

// ParsePayloadPointer reads a message body that is a claim-check pointer (either class the
// extended clients write). It reports false for anything else, an envelope included.
func ParsePayloadPointer(body string) (PayloadPointer, bool) {
	s := strings.TrimLeft(body, " \t\r\n")
	if len(s) == 0 || s[0] != '[' {
		return PayloadPointer{}, false
	}
	var parts []json.RawMessage
	if json.Unmarshal([]byte(s), &parts) != nil || len(parts) != 2 {
		return PayloadPointer{}, false
	}
	var class string
	if json.Unmarshal(parts[0], &class) != nil || (class != contract.PayloadPointerClass && class != legacyPayloadPointerClass) {
		return PayloadPointer{}, false
	}
	var ptr struct {
		Bucket string `json:"s3BucketName"`
		Key    string `json:"s3Key"`
	}
	if json.Unmarshal(parts[1], &ptr) != nil || ptr.Bucket == "" || ptr.Key == "" {
		return PayloadPointer{}, false
	}
	return PayloadPointer{Bucket: ptr.Bucket, Key: ptr.Key}, true
}

// defaultMaxPayloadSize is the largest claim-checked payload the runtime reads unless
// Config.MaxPayloadSize says otherwise: 64 MiB, which a function of the default 256 MB holds.
const defaultMaxPayloadSize = 64 << 20

// ErrPayloadTooLarge is wrapped by the permanent *PayloadError of a payload over
// Config.MaxPayloadSize.
var ErrPayloadTooLarge = errors.New("payload too large")

// PayloadError reports a claim-checked payload the Client could not store, or the runtime could
// not read. Permanent ones (see ReasonPayloadUnavailable) are dead-lettered at once; the others
// are retried.
type PayloadError struct {
	Op        string // "put", "get" or "delete"
	Bucket    string
	Key       string
	Permanent bool // the object cannot be read as things stand: dead-letter
	Err       error
}

// Error describes the failure.
func (e *PayloadError) Error() string {
	return fmt.Sprintf("jobs: payload %s s3://%s/%s: %v", e.Op, e.Bucket, e.Key, e.Err)
}

// Unwrap returns Err.
func (e *PayloadError) Unwrap() error { return e.Err }

// DeadLetterReason returns ReasonPayloadUnavailable for a permanent failure, else "" (retry).
func (e *PayloadError) DeadLetterReason() string {
	if e.Permanent {
		return contract.ReasonPayloadUnavailable
	}
	return ""
}

// payloadPermanent reports whether an S3 error means the object cannot be read as things stand:
// missing object or bucket, access refused.
func payloadPermanent(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "NoSuchKey", "NoSuchBucket", "NotFound", "AccessDenied", "Forbidden", "InvalidObjectState", "AllAccessDisabled":
		return true
	}
	return false
}

// payloadAttributes returns the message attributes of a pointer to a size-byte payload.
func payloadAttributes(size int) map[string]sqstypes.MessageAttributeValue {
	return map[string]sqstypes.MessageAttributeValue{
		contract.AttrPayloadSize: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(size))},
	}
}

// payloadAttributesSize is what payloadAttributes(size) counts toward SQS's message size.
func payloadAttributesSize(size int) int {
	return len(contract.AttrPayloadSize) + len("Number") + len(strconv.Itoa(size))
}

// offload makes p a claim check if its body is over threshold: the envelope is kept to be stored
// at the pointer's key, and the body becomes the pointer. It makes no AWS call (store does).
func (p *prepared) offload(o *Payloads, limit int) error {
	threshold := limit
	if o != nil && o.Threshold > 0 && o.Threshold < threshold {
		threshold = o.Threshold
	}
	if len(p.body) <= threshold {
		return nil
	}
	if o == nil {
		return fmt.Errorf("%w: %d bytes, the queue takes %d (set ClientOptions.Payloads to store larger jobs in S3)", ErrBodyTooLarge, len(p.body), limit)
	}
	if p.scheduled {
		return fmt.Errorf("%w: %d bytes", ErrPayloadDelayed, len(p.body))
	}
	p.payload = p.body
	p.pointer = PayloadPointer{Bucket: o.Bucket, Key: contract.PayloadKeyPrefix(awsarn.QueueName(p.queue)) + o.KeyPrefix + NewID()}
	p.body = p.pointer.Body()
	if n := len(p.body) + payloadAttributesSize(len(p.payload)); n > limit {
		return fmt.Errorf("%w: the pointer message is %d bytes (KeyPrefix too long?), the queue takes %d", ErrBodyTooLarge, n, limit)
	}
	return nil
}

// sendSize is what p's message counts toward SQS's size limits: body and attributes.
func (p *prepared) sendSize() int {
	if p.payload == "" {
		return len(p.body)
	}
	return len(p.body) + payloadAttributesSize(len(p.payload))
}

// attributes returns p's message attributes: the payload size of a claim check, else nil.
func (p *prepared) attributes() map[string]sqstypes.MessageAttributeValue {
	if p.payload == "" {
		return nil
	}
	return payloadAttributes(len(p.payload))
}

// store puts p's payload in S3 if p is a claim check not stored yet.
func (c *Client) store(ctx context.Context, p *prepared) error {
	if p.payload == "" || p.stored {
		return nil
	}
	_, err := c.opts.Payloads.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(p.pointer.Bucket),
		Key:           aws.String(p.pointer.Key),
		Body:          strings.NewReader(p.payload),
		ContentLength: aws.Int64(int64(len(p.payload))),
		ContentType:   aws.String("application/json"),
	})
	if err != nil {
		return &SendError{Kind: p.kind, ID: p.id, QueueURL: p.queue,
			Err: &PayloadError{Op: "put", Bucket: p.pointer.Bucket, Key: p.pointer.Key, Err: err}}
	}
	p.stored = true
	return nil
}

// fetchPayload reads the envelope a pointer of a message from queueURL names. The error is a
// *PayloadError, permanent when the object cannot be read as things stand.
func (h *sqsHandler) fetchPayload(ctx context.Context, queueURL string, ptr PayloadPointer) (string, error) {
	return fetchPayload(ctx, h.cfg.S3, h.cfg.PayloadBucket, queueURL, h.cfg.MaxPayloadSize, ptr)
}

// fetchPayload reads the envelope ptr names through api, never more than limit bytes of it. With
// bucket set (a deployed worker: JOBKIT_PAYLOAD_BUCKET), it reads only from that bucket and only
// under the payload prefix of queueURL, the queue the pointer came from: another queue's
// payloads are not this worker's to read or delete, whatever its role allows.
func fetchPayload(ctx context.Context, api PayloadS3API, bucket, queueURL string, limit int64, ptr PayloadPointer) (string, error) {
	fail := func(permanent bool, err error) (string, error) {
		return "", &PayloadError{Op: "get", Bucket: ptr.Bucket, Key: ptr.Key, Permanent: permanent, Err: err}
	}
	switch {
	case api == nil:
		return fail(true, fmt.Errorf("no S3 client (Config.S3) to read it; the function needs %s", contract.EnvPayloadBucket))
	case bucket != "" && ptr.Bucket != bucket:
		return fail(true, fmt.Errorf("the pointer names bucket %q, this function reads payloads from %q", ptr.Bucket, bucket))
	case bucket != "" && !strings.HasPrefix(ptr.Key, contract.PayloadKeyPrefix(awsarn.QueueName(queueURL))):
		return fail(true, fmt.Errorf("the pointer names key %q, outside the payloads of queue %s (%s…)", ptr.Key,
			awsarn.QueueName(queueURL), contract.PayloadKeyPrefix(awsarn.QueueName(queueURL))))
	}
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(ptr.Bucket), Key: aws.String(ptr.Key)})
	if err != nil {
		return fail(payloadPermanent(err), err)
	}
	defer out.Body.Close()
	if limit <= 0 {
		limit = defaultMaxPayloadSize
	}
	tooLarge := func(n int64) (string, error) {
		return fail(true, fmt.Errorf("%w: %d bytes or more, over this function's %d (%s)", ErrPayloadTooLarge, n, limit, contract.EnvMaxPayloadSize))
	}
	declared := aws.ToInt64(out.ContentLength)
	if declared > limit {
		return tooLarge(declared)
	}
	var buf bytes.Buffer
	if declared > 0 {
		buf.Grow(int(declared))
	}
	// The object may yield more than it declared: never read past the limit.
	n, err := io.Copy(&buf, io.LimitReader(out.Body, limit+1))
	if err != nil {
		return fail(false, err)
	}
	if n > limit {
		return tooLarge(n)
	}
	return buf.String(), nil
}

// deletePayload deletes a succeeded job's payload; a failure is logged (the bucket's lifecycle
// rule removes the object later).
func (b *batch) deletePayload(r *record) {
	ptr := r.pointer
	_, err := b.h.cfg.S3.DeleteObject(b.post(), &s3.DeleteObjectInput{Bucket: aws.String(ptr.Bucket), Key: aws.String(ptr.Key)})
	if err != nil {
		b.logRecord(slog.LevelWarn, r, "could not delete the job's payload after success; the bucket's lifecycle rule removes it",
			&PayloadError{Op: "delete", Bucket: ptr.Bucket, Key: ptr.Key, Err: err})
	}
}

// claim is a record's claim-check pointer and what the runtime did with it.
type claim struct {
	PayloadPointer
	size   int  // the payload's size, once fetched
	loaded bool // fetched and decoded: the record ran from it
}

// isPointer reports whether a body may be a claim-check pointer (a JSON array), cheaply: an
// envelope is an object.
func isPointer(body string) bool {
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '[':
			return true
		}
		return false
	}
	return false
}

// loadPayload fetches the envelope r's pointer names and sets r's row from it, as prepare does
// for an envelope in the body. Its errors are the record's: a permanent *PayloadError, an
// *EnvelopeError or an *UnknownKindError are dead-lettered, a transient *PayloadError retried.
func (b *batch) loadPayload(r *record) error {
	body, err := b.h.fetchPayload(b.jobCtx, r.row.QueueURL, r.pointer.PayloadPointer)
	if err != nil {
		return err
	}
	r.pointer.size = len(body)
	var env Envelope
	argsSrc, err := decodeEnvelope(body, &env, nil)
	if err != nil {
		r.row.ID, r.row.Kind = env.ID, env.Kind
		return err
	}
	if err := b.fillRow(r, &env, argsSrc, b.h.lookup(env.Kind)); err != nil {
		return err
	}
	r.pointer.loaded = true
	return nil
}

// sizeOf returns the payload's size for a dead-letter copy's AttrPayloadSize: as fetched, else
// as the message's own attribute says; "" when neither is known.
func (c *claim) sizeOf(m *wire.SQSMessage) string {
	if c.size > 0 {
		return strconv.Itoa(c.size)
	}
	for _, a := range m.MessageAttributes {
		if (a.Name == contract.AttrPayloadSize || a.Name == contract.AttrLegacyPayloadSize) && a.Value.StringValue != nil {
			return *a.Value.StringValue
		}
	}
	return ""
}
