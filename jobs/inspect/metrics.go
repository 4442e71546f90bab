package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// JobSeries is a queue's jobs per minute, from the runtime's metrics (namespace Jobkit): all its
// jobs (Kind "") or one kind's.
type JobSeries struct {
	Queue string
	Kind  string
	// Minutes are the starts of the minutes, oldest first, every minute of the window; the
	// counts are aligned with them (0 where nothing was published).
	Minutes                  []time.Time
	Succeeded, Retried, Dead []float64
}

// JobMetrics reads, for each queue (by name) over the last window (rounded up to whole minutes;
// at most 24 hours), the jobs succeeded, retried and dead per minute: one JobSeries per queue, then
// one per kind the queue published (CloudWatch ListMetrics on the Kind dimension). The runtime
// publishes every figure per queue and per queue and kind; the queue's series is the sum of its
// kinds' (which also holds on LocalStack, whose GetMetricData adds the [Queue, Kind] data to a
// [Queue] query: docs/emulators.md). It costs one ListMetrics call per queue and GetMetricData
// calls of up to 500 metrics (3 per kind).
func (i *Inspector) JobMetrics(ctx context.Context, queues []string, window time.Duration) ([]JobSeries, error) {
	if window <= 0 || window > 24*time.Hour {
		return nil, fmt.Errorf("inspect: JobMetrics window %s: want (0, 24h]", window)
	}
	end := i.now().Truncate(time.Minute).Add(time.Minute)
	start := end.Add(-(window + time.Minute - 1).Truncate(time.Minute))
	if !start.Before(end) {
		start = end.Add(-time.Minute)
	}
	var series []JobSeries
	for _, q := range queues {
		series = append(series, JobSeries{Queue: q})
		var kinds []string
		p := cloudwatch.NewListMetricsPaginator(i.cw, &cloudwatch.ListMetricsInput{
			Namespace: aws.String(contract.MetricNamespace), MetricName: aws.String(contract.MetricSucceeded),
			Dimensions: []cwtypes.DimensionFilter{{Name: aws.String(contract.DimensionQueue), Value: aws.String(q)}},
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, m := range out.Metrics {
				for _, d := range m.Dimensions {
					if aws.ToString(d.Name) == contract.DimensionKind && len(m.Dimensions) == 2 {
						kinds = append(kinds, aws.ToString(d.Value))
					}
				}
			}
		}
		sort.Strings(kinds)
		for _, k := range slices.Compact(kinds) { // moto lists a metric once per datum
			series = append(series, JobSeries{Queue: q, Kind: k})
		}
	}
	minutes := int(end.Sub(start) / time.Minute)
	for n := range series {
		s := &series[n]
		for m := range minutes {
			s.Minutes = append(s.Minutes, start.Add(time.Duration(m)*time.Minute))
		}
		s.Succeeded, s.Retried, s.Dead = make([]float64, minutes), make([]float64, minutes), make([]float64, minutes)
	}
	names := []string{contract.MetricSucceeded, contract.MetricRetried, contract.MetricDead}
	var queries []cwtypes.MetricDataQuery
	for n, s := range series {
		if s.Kind == "" {
			continue // the queue's total: the sum of its kinds, below
		}
		dims := []cwtypes.Dimension{{Name: aws.String(contract.DimensionQueue), Value: aws.String(s.Queue)},
			{Name: aws.String(contract.DimensionKind), Value: aws.String(s.Kind)}}
		for k, name := range names {
			queries = append(queries, cwtypes.MetricDataQuery{
				Id: aws.String("s" + strconv.Itoa(n) + "_" + strconv.Itoa(k)),
				MetricStat: &cwtypes.MetricStat{Period: aws.Int32(60), Stat: aws.String("Sum"),
					Metric: &cwtypes.Metric{Namespace: aws.String(contract.MetricNamespace), MetricName: aws.String(name), Dimensions: dims}},
			})
		}
	}
	for len(queries) > 0 {
		page := queries[:min(len(queries), 500)]
		queries = queries[len(page):]
		p := cloudwatch.NewGetMetricDataPaginator(i.cw, &cloudwatch.GetMetricDataInput{
			StartTime: aws.Time(start), EndTime: aws.Time(end), MetricDataQueries: page,
		})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, r := range out.MetricDataResults {
				var n, k int
				if _, err := fmt.Sscanf(aws.ToString(r.Id), "s%d_%d", &n, &k); err != nil || n >= len(series) || k >= len(names) {
					continue
				}
				dst := [][]float64{series[n].Succeeded, series[n].Retried, series[n].Dead}[k]
				for j, ts := range r.Timestamps {
					if m := int(ts.Sub(start) / time.Minute); m >= 0 && m < minutes && j < len(r.Values) {
						dst[m] += r.Values[j]
					}
				}
			}
		}
	}
	total := -1
	for n := range series {
		if series[n].Kind == "" {
			total = n
			continue
		}
		for m := range minutes {
			series[total].Succeeded[m] += series[n].Succeeded[m]
			series[total].Retried[m] += series[n].Retried[m]
			series[total].Dead[m] += series[n].Dead[m]
		}
	}
	return series, nil
}
