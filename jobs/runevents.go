package jobs

import (
	"time"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
	"github.com/jobkit-go/jobkit/jobs/event"
)

// event reports an event of r to Config.OnEvent, if set.
func (b *batch) event(r *record, typ event.Type, note string, err error, reason string) {
	on := b.h.cfg.OnEvent
	if on == nil {
		return
	}
	e := event.Event{Type: typ, Time: time.Now(), JobID: r.row.ID, Kind: r.row.Kind, Queue: awsarn.QueueName(r.row.QueueURL),
		MessageID: r.msg.MessageID, GroupID: r.row.GroupID, Attempt: r.row.Attempt, Reason: reason, Note: note}
	if err != nil {
		e.Error = err.Error()
	}
	switch typ {
	case event.Retried, event.Snoozed:
		e.Delay = r.delay
	}
	if r.ran {
		e.Duration = r.dur
	}
	on(e)
}
