package constructs

import (
	"cmp"
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// Lane is one priority lane of a PriorityQueue.
type Lane struct {
	// Name is the lane's name, the EnqueueOpts.Priority that routes to it ("critical", "bulk"):
	// lower-case letters and digits.
	Name string
	// Weight is the lane's share of PriorityQueueProps.TotalConcurrency (at least 1).
	Weight int
	// BacklogAlarmThreshold is the backlog (visible messages) above which the lane's backlog
	// alarm fires, e.g. the producer's Backpressure.MaxBacklog for the lane. Default
	// DefaultBacklogAlarmThreshold.
	BacklogAlarmThreshold int
}

// DefaultBacklogAlarmThreshold is Lane.BacklogAlarmThreshold's default.
const DefaultBacklogAlarmThreshold = 10000

// PriorityQueueProps configures a PriorityQueue.
type PriorityQueueProps struct {
	// Lanes, the first the default lane (the queue a kind is routed to without a Priority).
	// At least two.
	Lanes []Lane
	// TotalConcurrency is shared among the lanes by weight: each lane's event source mapping gets
	// MaximumConcurrency max(2, floor(TotalConcurrency·Weight/ΣWeight)) (2 is the least a
	// mapping takes), so a flood of one lane never takes another's capacity.
	TotalConcurrency int
	// Queue configures every lane's JobQueue (each with its own DLQ and alarms).
	Queue JobQueueProps
}

// PriorityQueue is one logical job queue with priority lanes: a JobQueue per lane (its own DLQ,
// redrive, DLQ-depth and age alarms), a backlog alarm per lane, and each lane's share of the
// concurrency for the Worker that consumes it (one Worker per lane, the same code: a dedicated
// pool per lane, as "drop everything" priority needs). A lane's queue is named
// contract.LaneQueueName(id, lane), <id><Lane> (outputs JobkitQueue<id><Lane>).
type PriorityQueue struct {
	constructs.Construct
	Name  string
	Lanes []*PriorityLane
}

// PriorityLane is one lane as deployed.
type PriorityLane struct {
	Lane
	Queue *JobQueue
	// MaxConcurrency is the MaximumConcurrency of the lane's event source mapping
	// (WorkerProps.MaxConcurrency).
	MaxConcurrency int
	BacklogAlarm   awscloudwatch.Alarm
}

var laneNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,31}$`)

// NewPriorityQueue defines a PriorityQueue. It panics on props that cannot describe one.
func NewPriorityQueue(scope constructs.Construct, id string, props *PriorityQueueProps) *PriorityQueue {
	if props == nil {
		panic(fmt.Sprintf("jobkit: PriorityQueue %q: nil props", id))
	}
	conc, err := LaneConcurrency(props.Lanes, props.TotalConcurrency)
	if err != nil {
		panic(fmt.Sprintf("jobkit: PriorityQueue %q: %v", id, err))
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	pq := &PriorityQueue{Construct: c, Name: id}
	for i, l := range props.Lanes {
		l.BacklogAlarmThreshold = cmp.Or(l.BacklogAlarmThreshold, DefaultBacklogAlarmThreshold)
		qp := props.Queue
		q := NewJobQueue(c, contract.LaneQueueName(id, l.Name), &qp)
		lane := &PriorityLane{Lane: l, Queue: q, MaxConcurrency: conc[i]}
		lane.BacklogAlarm = newAlarm(q.Construct, "BacklogAlarm", fmt.Sprintf("jobkit %s: lane %s holds more than %d jobs", id, l.Name, l.BacklogAlarmThreshold),
			q.Queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
				Period:    awscdk.Duration_Minutes(jsii.Number(1)),
				Statistic: jsii.String("Maximum"),
			}), float64(l.BacklogAlarmThreshold), props.Queue.AlarmActions)
		pq.Lanes = append(pq.Lanes, lane)
	}
	return pq
}

// Lane returns the lane named name, or nil.
func (pq *PriorityQueue) Lane(name string) *PriorityLane {
	for _, l := range pq.Lanes {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// LaneConcurrency returns each lane's MaximumConcurrency: max(2, floor(total·weight/Σweight)).
func LaneConcurrency(lanes []Lane, total int) ([]int, error) {
	if len(lanes) < 2 {
		return nil, fmt.Errorf("%d lanes: want at least 2", len(lanes))
	}
	sum := 0
	seen := map[string]bool{}
	for _, l := range lanes {
		if !laneNamePattern.MatchString(l.Name) || seen[l.Name] {
			return nil, fmt.Errorf("lane name %q: want distinct lower-case letters and digits", l.Name)
		}
		seen[l.Name] = true
		if l.Weight < 1 || l.BacklogAlarmThreshold < 0 {
			return nil, fmt.Errorf("lane %q: Weight %d (want at least 1), BacklogAlarmThreshold %d", l.Name, l.Weight, l.BacklogAlarmThreshold)
		}
		sum += l.Weight
	}
	if total < 2*len(lanes) || total > 1000*len(lanes) {
		return nil, fmt.Errorf("TotalConcurrency %d: want 2 per lane at least", total)
	}
	out := make([]int, len(lanes))
	for i, l := range lanes {
		out[i] = min(1000, max(2, total*l.Weight/sum))
	}
	return out, nil
}

// LaneURLs is what a producer's jobs.ClientOptions.Lanes needs for pq: the default lane's queue
// URL → lane name → queue URL (tokens until deployed).
func (pq *PriorityQueue) LaneURLs() map[string]map[string]string {
	lanes := map[string]string{}
	for _, l := range pq.Lanes {
		lanes[l.Name] = *l.Queue.Queue.QueueUrl()
	}
	return map[string]map[string]string{lanes[pq.Lanes[0].Name]: lanes}
}
