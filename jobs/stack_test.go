package jobs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// A lane's queue is the queue's name and the lane's, first letter upper-cased: the name the
// PriorityQueue construct gives it and its stack output JobkitQueue<Name>.
func TestLaneQueueName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "NotifyCritical", contract.LaneQueueName("Notify", "critical"))
	assert.Equal(t, "JobsBulk2", contract.LaneQueueName("Jobs", "bulk2"))
	assert.Equal(t, "Notify", contract.LaneQueueName("Notify", ""), "no lane: the queue itself")
}
