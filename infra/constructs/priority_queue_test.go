package constructs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLaneConcurrencyFollowsTheWeights(t *testing.T) {
	lanes := []Lane{{Name: "default", Weight: 3}, {Name: "critical", Weight: 6}, {Name: "bulk", Weight: 1}}
	got, err := LaneConcurrency(lanes, 100)
	require.NoError(t, err)
	require.Equal(t, []int{30, 60, 10}, got)
	got, err = LaneConcurrency(lanes, 10)
	require.NoError(t, err)
	require.Equal(t, []int{3, 6, 2}, got, "a mapping takes 2 at least")
	for _, bad := range [][]Lane{
		{{Name: "only", Weight: 1}},
		{{Name: "a", Weight: 1}, {Name: "a", Weight: 1}},
		{{Name: "Upper", Weight: 1}, {Name: "b", Weight: 1}},
		{{Name: "a", Weight: 0}, {Name: "b", Weight: 1}},
	} {
		_, err := LaneConcurrency(bad, 10)
		require.Error(t, err, "%+v", bad)
	}
	_, err = LaneConcurrency(lanes, 5)
	require.Error(t, err, "less than 2 per lane")
}

func TestPriorityQueueLanes(t *testing.T) {
	_, stack := newStack(t)
	pq := NewPriorityQueue(stack, "Jobs", &PriorityQueueProps{
		Lanes:            []Lane{{Name: "default", Weight: 2}, {Name: "critical", Weight: 1}, {Name: "bulk", Weight: 1, BacklogAlarmThreshold: 5000}},
		TotalConcurrency: 40,
	})
	require.Equal(t, 20, pq.Lane("default").MaxConcurrency)
	require.Equal(t, 10, pq.Lane("critical").MaxConcurrency)
	require.Equal(t, "JobsBulk", pq.Lane("bulk").Queue.Name)
	require.Nil(t, pq.Lane("urgent"))
	lanes := pq.LaneURLs()
	require.Len(t, lanes, 1)
	for _, byName := range lanes {
		require.Len(t, byName, 3)
	}
	tpl := synth(t, stack)
	require.Len(t, tpl.Resources("AWS::SQS::Queue"), 6, "a queue and a DLQ per lane")
	backlog := map[string]float64{}
	for _, body := range tpl.Resources("AWS::CloudWatch::Alarm") {
		p := props(body)
		if p["MetricName"] == "ApproximateNumberOfMessagesVisible" && strings.Contains(p["AlarmDescription"].(string), "lane") {
			backlog[p["AlarmDescription"].(string)] = p["Threshold"].(float64)
		}
	}
	require.Equal(t, map[string]float64{
		"jobkit Jobs: lane default holds more than 10000 jobs":  10000,
		"jobkit Jobs: lane critical holds more than 10000 jobs": 10000,
		"jobkit Jobs: lane bulk holds more than 5000 jobs":      5000,
	}, backlog)
	outputs := tpl["Outputs"].(map[string]any)
	for _, name := range []string{"JobkitQueueJobsDefault", "JobkitQueueJobsCritical", "JobkitQueueJobsBulk", "JobkitDlqJobsBulk"} {
		require.Contains(t, outputs, name)
	}
}
