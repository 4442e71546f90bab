package awstest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// receiveOnce receives up to max messages from url, waiting up to 1 s, with every system and
// message attribute.
func receiveOnce(tb testing.TB, client *sqs.Client, url string, max int) []sqstypes.Message {
	tb.Helper()
	out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: int32(max), WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		tb.Fatalf("awstest: receive from %s: %v", url, err)
	}
	return out.Messages
}

// Receive receives up to n messages from url (with all their attributes), polling until n
// arrived or wait passed. The messages stay on the queue, in flight.
func Receive(tb testing.TB, client *sqs.Client, url string, n int, wait time.Duration) []sqstypes.Message {
	tb.Helper()
	var got []sqstypes.Message
	for deadline := time.Now().Add(wait); len(got) < n && time.Now().Before(deadline); {
		got = append(got, receiveOnce(tb, client, url, min(10, n-len(got)))...)
	}
	return got
}

// ReceiveN is Receive that fails the test unless n messages arrive within 20 s.
func ReceiveN(tb testing.TB, client *sqs.Client, url string, n int) []sqstypes.Message {
	tb.Helper()
	got := Receive(tb, client, url, n, 20*time.Second)
	if len(got) != n {
		tb.Fatalf("awstest: %d messages received from %s, want %d", len(got), url, n)
	}
	return got
}

// Take receives and deletes n messages from url, as a consumer does (on a FIFO queue a group's
// next message is received only once the one before is deleted), and fails the test unless n
// arrive within 20 s.
func Take(tb testing.TB, client *sqs.Client, url string, n int) []sqstypes.Message {
	tb.Helper()
	var got []sqstypes.Message
	for deadline := time.Now().Add(20 * time.Second); len(got) < n && time.Now().Before(deadline); {
		msgs := receiveOnce(tb, client, url, min(10, n-len(got)))
		Delete(tb, client, url, msgs)
		got = append(got, msgs...)
	}
	if len(got) != n {
		tb.Fatalf("awstest: %d messages taken from %s, want %d", len(got), url, n)
	}
	return got
}

// TakeOnly is Take that fails the test unless url is then empty: exactly n messages arrived.
func TakeOnly(tb testing.TB, client *sqs.Client, url string, n int) []sqstypes.Message {
	tb.Helper()
	got := Take(tb, client, url, n)
	ExpectEmpty(tb, client, url)
	return got
}

// ExpectEmpty fails the test if a receive of 1 s gets a message from url.
func ExpectEmpty(tb testing.TB, client *sqs.Client, url string) {
	tb.Helper()
	if got := receiveOnce(tb, client, url, 10); len(got) > 0 {
		tb.Fatalf("awstest: %s holds %d messages more than expected", url, len(got))
	}
}

// Delete deletes the messages from url.
func Delete(tb testing.TB, client *sqs.Client, url string, msgs []sqstypes.Message) {
	tb.Helper()
	for _, m := range msgs {
		if _, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			tb.Fatalf("awstest: delete from %s: %v", url, err)
		}
	}
}

// Drain receives from url until two receives in a row find nothing, and returns what it got
// (left in flight).
func Drain(tb testing.TB, client *sqs.Client, url string) []sqstypes.Message {
	tb.Helper()
	var got []sqstypes.Message
	for empty := 0; empty < 2; {
		msgs := receiveOnce(tb, client, url, 10)
		if len(msgs) == 0 {
			empty++
		}
		got = append(got, msgs...)
	}
	return got
}

// TakeAll receives and deletes every message of url until the queue holds none, visible or in
// flight (delayed messages are left), and returns them. A receive can be carried out by SQS and its answer lost (the
// connection fails while the 200 is read, and the SDK makes the call again): that receive's
// messages stay in flight, unseen, until their visibility timeout ends. So TakeAll receives with
// a visibility timeout of 20 s and waits up to a minute for in-flight messages to come back,
// rather than stop at the first empty receive; a message delivered twice that way is kept once
// (by its SQS message id). Deleting also frees a FIFO group's next message.
func TakeAll(tb testing.TB, client *sqs.Client, url string) []sqstypes.Message {
	tb.Helper()
	const visibility = 20
	var got []sqstypes.Message
	seen := map[string]bool{}
	for deadline := time.Now().Add((visibility + 40) * time.Second); ; {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: visibility, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			tb.Fatalf("awstest: receive from %s: %v", url, err)
		}
		if len(out.Messages) == 0 {
			if v, f := Counts(tb, client, url); v+f == 0 {
				return got
			}
			if time.Now().After(deadline) {
				tb.Fatalf("awstest: %s still holds messages in flight after %s", url, (visibility+40)*time.Second)
			}
			time.Sleep(time.Second)
			continue
		}
		deadline = time.Now().Add((visibility + 40) * time.Second) // it drains: wait anew
		for _, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				got = append(got, m)
			}
		}
		Delete(tb, client, url, out.Messages)
	}
}

// SyncBuffer is a bytes.Buffer that goroutines (a process's output) may write while a test reads.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes returns a copy of what was written so far.
func (b *SyncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
