package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/inspect"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// deadSeed is a dead job as the jobs runtime leaves it in a DLQ.
type deadSeed struct {
	ID, Kind, Error, Body string // Body "" means an envelope of ID and Kind
}

// fixture is a queue with a DLQ on the test endpoint, and a console over it.
type fixture struct {
	cfg    aws.Config
	sqs    *sqs.Client
	queue  awstest.Queue
	dlq    awstest.Queue
	server *Server
	http   *httptest.Server
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	cfg := awstest.Config(t)
	f := &fixture{cfg: cfg, sqs: sqs.NewFromConfig(cfg)}
	f.dlq = awstest.CreateQueue(t, cfg, "dlq", nil)
	f.queue = awstest.CreateQueue(t, cfg, "jobs", &awstest.QueueOptions{DLQ: &f.dlq})
	o.Target = inspect.Target{Stack: awstest.Name(t, "nostack"), Queues: []string{f.queue.URL}}
	s, err := New(context.Background(), inspect.New(cfg), o)
	require.NoError(t, err)
	f.server = s
	f.http = httptest.NewServer(s)
	t.Cleanup(f.http.Close)
	return f
}

func strAttr(v string) sqstypes.MessageAttributeValue {
	return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// seed puts dead jobs in the fixture's DLQ with the runtime's attributes.
func (f *fixture) seed(t *testing.T, jobsToSeed ...deadSeed) {
	t.Helper()
	for start := 0; start < len(jobsToSeed); start += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for n, j := range jobsToSeed[start:min(start+10, len(jobsToSeed))] {
			body := j.Body
			if body == "" {
				b, _ := json.Marshal(jobs.Envelope{V: 1, ID: j.ID, Kind: j.Kind, Args: json.RawMessage(`{"to":"ops@example.com"}`), EnqueuedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)})
				body = string(b)
			}
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
				Id: aws.String("e" + strconv.Itoa(n)), MessageBody: aws.String(body),
				MessageAttributes: map[string]sqstypes.MessageAttributeValue{
					contract.AttrReason:         strAttr(contract.ReasonAttemptsUsed),
					contract.AttrError:          strAttr(j.Error),
					contract.AttrKind:           strAttr(j.Kind),
					contract.AttrJobID:          strAttr(j.ID),
					contract.AttrAttempts:       {DataType: aws.String("Number"), StringValue: aws.String("5")},
					contract.AttrFunction:       strAttr("email-worker"),
					contract.AttrFirstFailureAt: strAttr("2026-11-21T12:00:01Z"),
					contract.AttrFailedAt:       strAttr("2026-11-21T12:05:00Z"),
					contract.AttrSourceQueue:    strAttr(f.queue.URL),
				},
			})
		}
		out, err := f.sqs.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(f.dlq.URL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
}

// visible returns a queue's ApproximateNumberOfMessages.
func (f *fixture) visible(t *testing.T, queueURL string) int {
	t.Helper()
	out, err := f.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	require.NoError(t, err)
	n, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	return n
}

func (f *fixture) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodGet, f.http.URL+path, "", nil)
}

// Hostile dead jobs go through the emulator (SQS carries them as any producer could send them)
// and come out of the page and the API as inert text: no markup of theirs survives, a huge body
// is cut in the list and whole in the envelope view.
func TestHostileJobsThroughTheEmulator(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	huge := `{"v":1,"id":"huge","kind":"blob","args":{"data":"` + strings.Repeat("x", 200_000) + `"}}`
	f.seed(t,
		deadSeed{ID: "xss-kind", Kind: "<script>alert(1)</script>", Error: "<img src=x onerror=alert(2)>"},
		deadSeed{ID: "xss-body", Kind: "email.send", Error: "boom \u202e gnp.exe",
			Body: `{"v":1,"id":"xss-body","kind":"email.send","args":{"s":"</pre></td><script>alert(3)</script>"}}`},
		deadSeed{ID: "huge", Kind: "blob", Error: "too big", Body: huge},
		deadSeed{ID: `"><svg onload=alert(4)>`, Kind: "email.send", Error: "quoted id"},
	)
	res, page := f.get(t, "/?queue="+f.queue.Name)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "4 shown")
	for _, raw := range []string{"<script>alert", "<img src", "<svg", "</pre></td><script>", "\u202e"} {
		require.NotContains(t, page, raw)
	}
	require.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, page, `\u202e`)
	require.Less(t, len(page), 60_000, "a huge body is cut in the list")
	require.Contains(t, page, fmt.Sprintf("(%d bytes)", len(huge)))

	res, doc := f.get(t, "/api/dead?queue="+f.queue.Name)
	require.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	var list deadListView
	require.NoError(t, json.Unmarshal([]byte(doc), &list))
	require.Len(t, list.Jobs, 4)

	res, doc = f.get(t, "/api/envelope?queue="+f.queue.Name+"&id=huge")
	require.Equal(t, http.StatusOK, res.StatusCode, doc)
	var env envelopeView
	require.NoError(t, json.Unmarshal([]byte(doc), &env))
	require.Contains(t, env.FullBody, strings.Repeat("x", 200_000))

	res, page = f.get(t, "/?queue="+f.queue.Name+"&job=xss-body")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, `id="envelope-body"`)
	require.Contains(t, page, "&lt;/pre&gt;&lt;/td&gt;&lt;script&gt;alert(3)&lt;/script&gt;")
	require.NotContains(t, page, "<script>alert")
}

// The API end to end on the emulator: queues, redrive of one job (it leaves the DLQ for its
// queue), purge refused without the DLQ's name and done with it.
func TestRedriveAndPurgeThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed(t, deadSeed{ID: "a", Kind: "email.send", Error: "smtp 421"}, deadSeed{ID: "b", Kind: "email.send", Error: "smtp 421"})

	_, doc := f.get(t, "/api/queues")
	require.Contains(t, doc, `"name":"`+f.queue.Name+`"`)
	require.Contains(t, doc, `"dlq":{"name":"`+f.dlq.Name+`","fifo":false,"visible":2`)

	post := func(path, body string) (*http.Response, string) {
		return do(t, http.MethodPost, f.http.URL+path, body, map[string]string{
			"Content-Type": "application/json", TokenHeader: f.server.Token(), "Origin": f.http.URL, "Sec-Fetch-Site": "same-origin",
		})
	}
	res, doc := post("/api/redrive", fmt.Sprintf(`{"queue":%q,"ids":["a"]}`, f.queue.Name))
	require.Equal(t, http.StatusAccepted, res.StatusCode, doc)
	var tk task
	require.NoError(t, json.Unmarshal([]byte(doc), &tk))
	require.Eventually(t, func() bool {
		_, doc := f.get(t, "/api/tasks/"+tk.ID)
		require.NoError(t, json.Unmarshal([]byte(doc), &tk))
		return tk.Done
	}, 60*time.Second, 200*time.Millisecond)
	require.Empty(t, tk.Error)
	require.EqualValues(t, 1, tk.Moved)
	require.Eventually(t, func() bool { return f.visible(t, f.queue.URL) == 1 && f.visible(t, f.dlq.URL) == 1 }, 30*time.Second, 200*time.Millisecond)

	res, doc = post("/api/purge", fmt.Sprintf(`{"queue":%q,"confirm":"yes"}`, f.queue.Name))
	require.Equal(t, http.StatusBadRequest, res.StatusCode, doc)
	require.Contains(t, doc, f.dlq.Name)
	res, doc = post("/api/purge", fmt.Sprintf(`{"queue":%q,"confirm":%q}`, f.queue.Name, f.dlq.Name))
	require.Equal(t, http.StatusOK, res.StatusCode, doc)
	require.Eventually(t, func() bool { return f.visible(t, f.dlq.URL) == 0 }, 70*time.Second, 500*time.Millisecond)
}

// With HideBodies (`jobkit console --read-only`), no job's body leaves the console: the list
// gives its size, the job's view and the API neither body nor envelope.
func TestHiddenBodiesThroughTheEmulator(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true, HideBodies: true})
	secret := `{"v":1,"id":"card","kind":"card.charge","args":{"pan":"4111111111111111"}}`
	f.seed(t, deadSeed{ID: "card", Kind: "card.charge", Error: "declined", Body: secret})

	res, page := f.get(t, "/?queue="+f.queue.Name)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, page, "card.charge")
	require.NotContains(t, page, "4111111111111111")
	require.Contains(t, page, fmt.Sprintf("hidden (%d bytes)", len(secret)))

	res, page = f.get(t, "/?queue="+f.queue.Name+"&job=card")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotContains(t, page, "4111111111111111")
	require.Contains(t, page, "The body is hidden")

	_, doc := f.get(t, "/api/dead?queue="+f.queue.Name)
	require.NotContains(t, doc, "4111111111111111")
	var list deadListView
	require.NoError(t, json.Unmarshal([]byte(doc), &list))
	require.Len(t, list.Jobs, 1)
	require.True(t, list.Jobs[0].Hidden)
	require.Equal(t, len(secret), list.Jobs[0].BodyBytes)

	res, doc = f.get(t, "/api/envelope?queue="+f.queue.Name+"&id=card")
	require.Equal(t, http.StatusOK, res.StatusCode, doc)
	require.NotContains(t, doc, "4111111111111111")
}
