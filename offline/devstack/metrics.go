package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// Offline, the emulators' CloudWatch stores metrics but reads none from logs: on AWS, CloudWatch
// extracts the embedded-metric-format lines of a function's output (and those a container's agent
// writes) into metrics. metricsTee does that for the stack: every EMF line of the functions' and
// containers' output (Config.Output) becomes PutMetricData calls to the emulator, so the
// metrics the console and `jobkit queues` read on AWS are there offline too.
type metricsTee struct {
	out io.Writer
	cw  *cloudwatch.Client
	log *slog.Logger

	mu      sync.Mutex
	pending map[string][]cwtypes.MetricDatum // by namespace
	stop    chan struct{}
	done    chan struct{}
}

// emfMarker opens the JSON object of an EMF line.
var emfMarker = []byte(`{"_aws":`)

// maxDatums is PutMetricData's limit per call.
const maxDatums = 1000

func newMetricsTee(out io.Writer, cw *cloudwatch.Client, log *slog.Logger) *metricsTee {
	t := &metricsTee{out: out, cw: cw, log: log, pending: map[string][]cwtypes.MetricDatum{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// Write passes p on and reads the EMF lines in it (whole lines, as the runtimes write them).
func (t *metricsTee) Write(p []byte) (int, error) {
	n, err := t.out.Write(p)
	for rest := p; len(rest) > 0; { // line by line, without a slice of lines per write
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if i := bytes.Index(line, emfMarker); i >= 0 {
			t.add(parseEMF(line[i:]))
		}
	}
	return n, err
}

func (t *metricsTee) add(byNamespace map[string][]cwtypes.MetricDatum) {
	if len(byNamespace) == 0 {
		return
	}
	t.mu.Lock()
	for ns, d := range byNamespace {
		t.pending[ns] = append(t.pending[ns], d...)
	}
	t.mu.Unlock()
}

// run publishes what was read, at most once a second, until close.
func (t *metricsTee) run() {
	defer close(t.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			t.flush()
			return
		case <-tick.C:
			t.flush()
		}
	}
}

func (t *metricsTee) flush() {
	t.mu.Lock()
	pending := t.pending
	t.pending = map[string][]cwtypes.MetricDatum{}
	t.mu.Unlock()
	for ns, data := range pending {
		for len(data) > 0 {
			chunk := data[:min(len(data), maxDatums)]
			data = data[len(chunk):]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := t.cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String(ns), MetricData: chunk})
			cancel()
			if err != nil {
				t.log.Warn("metrics: PutMetricData to the emulator failed; these metrics are dropped", "namespace", ns, "datums", len(chunk), "error", err)
			}
		}
	}
}

// close publishes what is left and stops.
func (t *metricsTee) close() {
	close(t.stop)
	<-t.done
}

// parseEMF reads one EMF line as CloudWatch does: for each directive of _aws.CloudWatchMetrics,
// each dimension set and each metric, a datum per value (a metric's value may be a list) at
// _aws.Timestamp. A line that is not EMF gives nothing.
func parseEMF(line []byte) map[string][]cwtypes.MetricDatum {
	var doc map[string]json.RawMessage
	if json.Unmarshal(line, &doc) != nil {
		return nil
	}
	var meta struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	if json.Unmarshal(doc["_aws"], &meta) != nil || meta.Timestamp <= 0 {
		return nil // not EMF: CloudWatch requires _aws.Timestamp
	}
	at := time.UnixMilli(meta.Timestamp)
	out := map[string][]cwtypes.MetricDatum{}
	for _, d := range meta.CloudWatchMetrics {
		for _, set := range d.Dimensions {
			dims := make([]cwtypes.Dimension, 0, len(set))
			for _, name := range set {
				var v string
				if json.Unmarshal(doc[name], &v) != nil {
					dims = nil
					break
				}
				dims = append(dims, cwtypes.Dimension{Name: aws.String(name), Value: aws.String(v)})
			}
			if dims == nil && len(set) > 0 {
				continue // a dimension without a string value: CloudWatch skips the set
			}
			for _, m := range d.Metrics {
				for _, v := range values(doc[m.Name]) {
					out[d.Namespace] = append(out[d.Namespace], cwtypes.MetricDatum{
						MetricName: aws.String(m.Name), Dimensions: dims, Value: aws.Float64(v),
						Timestamp: aws.Time(at), Unit: cwtypes.StandardUnit(m.Unit),
					})
				}
			}
		}
	}
	return out
}

// values reads a metric's value: a number or a list of numbers.
func values(raw json.RawMessage) []float64 {
	var one float64
	if json.Unmarshal(raw, &one) == nil {
		return []float64{one}
	}
	var many []float64
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}
