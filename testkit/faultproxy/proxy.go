// Package faultproxy is a reverse proxy on 127.0.0.1 between AWS SDK clients and an AWS endpoint
// (the offline emulator): it counts every request by API, with the DynamoDB capacity units each
// forwarded request consumes, and answers a chosen fraction of requests with a protocol-correct
// throttling error instead of forwarding them, as AWS does under load. Point AWS_ENDPOINT_URL
// (or an aws.Config's BaseEndpoint) at Proxy.URL and every call goes through it.
//
// A throttled request never reaches the endpoint, so it has no effect there: the client sees an
// error its SDK classifies as a retryable throttle (aws-sdk-go-v2's retry.DefaultThrottleErrorCodes)
// and retries with backoff.
//
//   - SQS (JSON protocol): HTTP 400, {"__type":"com.amazon.coral.availability#ThrottlingException"}
//     with the query-compatible header x-amzn-query-error: ThrottlingException;Sender.
//   - DynamoDB: HTTP 400, {"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}
//     with the x-amz-crc32 checksum DynamoDB puts on every response.
//   - Anything else (query protocol): HTTP 400 with an XML ErrorResponse, code Throttling.
package faultproxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/jobkit-go/jobkit/offline/loopback"
)

// Throttling error codes the proxy answers with.
const (
	CodeSQSThrottle      = "ThrottlingException"
	CodeDynamoDBThrottle = "ProvisionedThroughputExceededException"
	CodeQueryThrottle    = "Throttling"
)

// Options configure a Proxy. Nil means the defaults: no faults.
type Options struct {
	// ThrottleRate is the fraction of requests (0 to 1) answered with a throttling error instead
	// of being forwarded. Default 0. SetThrottleRate changes it while the proxy runs.
	ThrottleRate float64
	// Seed makes the choice of throttled requests repeatable for one sequence of requests; 0
	// picks a random seed.
	Seed uint64
	// Exempt, if set, is asked for every request's API ("SQS.ReceiveMessage"): true forwards it
	// without a fault. Default none.
	Exempt func(api string) bool
	// Logger receives proxy errors; default discards.
	Logger *slog.Logger
	// Latency, if set, is asked for every request's API ("SQS.ChangeMessageVisibilityBatch"): the
	// request waits that long before it is forwarded, as a slow AWS answer does. A client that
	// gives up meanwhile (its context ends) never reaches the endpoint. Default none.
	Latency func(api string) time.Duration
}

// APIStats counts one API's requests.
type APIStats struct {
	// Requests is every request received; Throttled those answered with a throttling error;
	// Forwarded those sent on (Requests = Throttled + Forwarded + those the endpoint could not
	// be reached for).
	Requests, Throttled, Forwarded int64
	// Errors counts forwarded requests the endpoint answered with a status of 400 or more
	// (e.g. a failed DynamoDB condition).
	Errors int64
	// EmptyReceives counts SQS ReceiveMessage answers without messages; Messages the messages
	// ReceiveMessage answers carried.
	EmptyReceives, Messages int64
	// Entries counts the entries of forwarded SQS batch calls (SendMessageBatch, ...).
	Entries int64
	// WriteUnits and ReadUnits are the DynamoDB capacity units of the forwarded requests, as
	// on-demand billing counts them (see CapacityUnits).
	WriteUnits, ReadUnits float64
}

// Stats is a snapshot of the proxy's counters.
type Stats struct {
	// APIs maps "<Service>.<Operation>" (e.g. "SQS.SendMessageBatch", "DynamoDB.PutItem") to its
	// counters.
	APIs map[string]APIStats
	// Queues maps an SQS queue's name to the counters of the requests about it.
	Queues map[string]Stats
}

// Total sums the counters of every API whose name starts with prefix ("" for all, "SQS." for
// one service).
func (s Stats) Total(prefix string) APIStats {
	var t APIStats
	for name, a := range s.APIs {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		t.Requests += a.Requests
		t.Throttled += a.Throttled
		t.Forwarded += a.Forwarded
		t.Errors += a.Errors
		t.EmptyReceives += a.EmptyReceives
		t.Messages += a.Messages
		t.Entries += a.Entries
		t.WriteUnits += a.WriteUnits
		t.ReadUnits += a.ReadUnits
	}
	return t
}

// Names returns the API names, sorted.
func (s Stats) Names() []string {
	names := make([]string, 0, len(s.APIs))
	for n := range s.APIs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Proxy is a running fault proxy. It is safe for concurrent use.
type Proxy struct {
	url    string
	srv    *http.Server
	ln     net.Listener
	rp     *httputil.ReverseProxy
	log    *slog.Logger
	exempt func(string) bool
	delay  func(string) time.Duration
	done   chan struct{}

	mu     sync.Mutex
	rate   float64
	rng    *mrand.Rand
	stats  map[string]*APIStats
	queues map[string]map[string]*APIStats
}

// Start listens on a free port of 127.0.0.1 and forwards to upstream (e.g. the emulator's
// "http://127.0.0.1:4566").
func Start(upstream string, opts *Options) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("faultproxy: upstream %q is not an http(s) URL", upstream)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ThrottleRate < 0 || o.ThrottleRate > 1 || math.IsNaN(o.ThrottleRate) {
		return nil, fmt.Errorf("faultproxy: ThrottleRate %v is outside 0-1", o.ThrottleRate)
	}
	seed := o.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		for _, x := range b {
			seed = seed<<8 | uint64(x)
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		url:    "http://" + ln.Addr().String(),
		ln:     ln,
		log:    log,
		exempt: o.Exempt,
		delay:  o.Latency,
		done:   make(chan struct{}),
		rate:   o.ThrottleRate,
		rng:    mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		stats:  map[string]*APIStats{},
		queues: map[string]map[string]*APIStats{},
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // keep the Host the client signed
		},
		Transport:      transport,
		ModifyResponse: p.observe,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Warn("faultproxy: upstream call failed", "api", apiName(r, nil), "error", err)
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: loopback.Guard(p), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is the proxy's address, to use as the AWS endpoint.
func (p *Proxy) URL() string { return p.url }

// Config returns a copy of cfg whose clients call through the proxy.
func (p *Proxy) Config(cfg aws.Config) aws.Config {
	out := cfg.Copy()
	out.BaseEndpoint = aws.String(p.url)
	return out
}

// SetThrottleRate changes the fraction of requests throttled from now on.
func (p *Proxy) SetThrottleRate(rate float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate = min(max(rate, 0), 1)
}

// Stats returns a snapshot of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{APIs: make(map[string]APIStats, len(p.stats)), Queues: make(map[string]Stats, len(p.queues))}
	for k, v := range p.stats {
		s.APIs[k] = *v
	}
	for q, apis := range p.queues {
		qs := Stats{APIs: make(map[string]APIStats, len(apis))}
		for k, v := range apis {
			qs.APIs[k] = *v
		}
		s.Queues[q] = qs
	}
	return s
}

// ResetStats sets every counter to zero.
func (p *Proxy) ResetStats() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats = map[string]*APIStats{}
	p.queues = map[string]map[string]*APIStats{}
}

// Close stops the proxy, ending requests in flight, and waits until it has stopped.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

type ctxKey struct{}

// call is what ServeHTTP learned about a request, for observe.
type call struct {
	api        string
	queue      string // the SQS queue's name
	consistent bool   // a Query or Scan with ConsistentRead
}

// counters returns the counters of api, and of api on queue (nil without a queue). p.mu is held.
func (p *Proxy) counters(api, queue string) (*APIStats, *APIStats) {
	st := p.stats[api]
	if st == nil {
		st = &APIStats{}
		p.stats[api] = st
	}
	if queue == "" {
		return st, nil
	}
	apis := p.queues[queue]
	if apis == nil {
		apis = map[string]*APIStats{}
		p.queues[queue] = apis
	}
	qs := apis[api]
	if qs == nil {
		qs = &APIStats{}
		apis[api] = qs
	}
	return st, qs
}

// each applies fn to the counters that are not nil.
func each(fn func(*APIStats), sts ...*APIStats) {
	for _, st := range sts {
		if st != nil {
			fn(st)
		}
	}
}

// ServeHTTP counts the request, then throttles or forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	api := apiName(r, body)
	wcu, rcu, entries := requestUnits(api, body)
	c := &call{api: api}
	if strings.HasPrefix(api, "SQS.") {
		c.queue = queueName(body)
	}

	p.mu.Lock()
	st, qs := p.counters(api, c.queue)
	throttle := p.rate > 0 && (p.exempt == nil || !p.exempt(api)) && p.rng.Float64() < p.rate
	each(func(a *APIStats) {
		a.Requests++
		if throttle {
			a.Throttled++
			return
		}
		a.Forwarded++
		a.WriteUnits += wcu
		a.ReadUnits += rcu
		a.Entries += int64(entries)
	}, st, qs)
	p.mu.Unlock()

	if throttle {
		writeThrottle(w, api)
		return
	}
	if p.delay != nil {
		if d := p.delay(api); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return // the client gave up: nothing reaches the endpoint
			}
		}
	}
	if api == "DynamoDB.Query" || api == "DynamoDB.Scan" {
		c.consistent = bytes.Contains(body, []byte(`"ConsistentRead":true`))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, c)))
}

// observe counts what the endpoint answered.
func (p *Proxy) observe(resp *http.Response) error {
	c, _ := resp.Request.Context().Value(ctxKey{}).(*call)
	if c == nil {
		return nil
	}
	var msgs int64 = -1
	var rcu float64
	if resp.StatusCode < 400 && (c.api == "SQS.ReceiveMessage" || c.api == "DynamoDB.Query" || c.api == "DynamoDB.Scan") {
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if c.api == "SQS.ReceiveMessage" {
			msgs = countMessages(body)
		} else {
			// What a Query or Scan reads is about what it returns (JSON is a little larger).
			rcu = units(len(body), readUnitBytes) * readCost(c.consistent)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st, qs := p.counters(c.api, c.queue)
	each(func(a *APIStats) {
		a.ReadUnits += rcu
		if resp.StatusCode >= 400 {
			a.Errors++
		}
		if msgs == 0 {
			a.EmptyReceives++
		} else if msgs > 0 {
			a.Messages += msgs
		}
	}, st, qs)
	return nil
}

// apiName names the request's API: "<Service>.<Operation>".
func apiName(r *http.Request, body []byte) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, ok := strings.Cut(t, ".")
		if !ok {
			return "other." + t
		}
		switch {
		case prefix == "AmazonSQS":
			return "SQS." + op
		case strings.HasPrefix(prefix, "DynamoDB_"):
			return "DynamoDB." + op
		case strings.HasPrefix(prefix, "DynamoDBStreams_"):
			return "DynamoDBStreams." + op
		}
		return prefix + "." + op
	}
	// Query protocol: Action=... in the form body.
	if body != nil {
		if v, err := url.ParseQuery(string(body)); err == nil && v.Get("Action") != "" {
			return serviceFromAuth(r) + "." + v.Get("Action")
		}
	}
	return serviceFromAuth(r) + "." + r.Method
}

// serviceFromAuth reads the signing service name from the SigV4 Authorization header.
func serviceFromAuth(r *http.Request) string {
	// Credential=AKID/20260101/us-east-1/sqs/aws4_request
	auth := r.Header.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return "other"
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) >= 4 {
		return parts[3]
	}
	return "other"
}

// writeThrottle answers a throttling error in the protocol of api's service.
func writeThrottle(w http.ResponseWriter, api string) {
	h := w.Header()
	h.Set("X-Amzn-Requestid", requestID())
	service, _, _ := strings.Cut(api, ".")
	switch service {
	case "SQS":
		body := []byte(`{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate exceeded"}`)
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amzn-Query-Error", CodeSQSThrottle+";Sender")
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	case "DynamoDB", "DynamoDBStreams":
		body := []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",` +
			`"message":"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."}`)
		h.Set("Content-Type", "application/x-amz-json-1.0")
		h.Set("X-Amz-Crc32", fmt.Sprint(crc32.ChecksumIEEE(body)))
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	default:
		body := []byte(`<ErrorResponse><Error><Type>Sender</Type><Code>` + CodeQueryThrottle +
			`</Code><Message>Rate exceeded</Message></Error><RequestId>` + h.Get("X-Amzn-Requestid") + `</RequestId></ErrorResponse>`)
		h.Set("Content-Type", "text/xml")
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(body)
	}
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
