package inspect

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs/awsarn"
)

// ErrNativeFIFO: RedriveNative was asked for on a FIFO dead-letter queue (or towards a FIFO queue),
// and refused before anything moved. SQS's move task sends each message on with the deduplication
// id it had: a job redriven within 5 minutes of its send (its enqueue, or the dead-lettering)
// can be dropped as a repeat, the task counting it moved and the queue never receiving it. AWS
// documents no guarantee either way, so jobkit does not rely on it: RedriveAuto and RedriveManual
// move FIFO jobs with a deduplication id of their own (RedriveDeduplicationID).
var ErrNativeFIFO = errors.New("inspect: a native move keeps each message's deduplication id, so SQS may drop a FIFO job redriven within 5 minutes of its send; use the manual move (method auto or manual)")

// fifoFallback is RedriveResult.FallbackReason when RedriveAuto moves FIFO jobs by hand.
const fifoFallback = "FIFO queue: a native move keeps each message's deduplication id, so SQS may drop a job redriven within 5 minutes of its send; the manual move gives each a new one"

// chooseMethod picks the move Redrive makes: the one asked for, or, for RedriveAuto, the native
// move unless a filter or a FIFO queue needs the manual one (res.FallbackReason then says which).
// It refuses a native move on FIFO queues and an unknown method before anything moves.
func chooseMethod(dlq QueueStats, o *RedriveOptions, res *RedriveResult) (RedriveMethod, error) {
	fifo := fifoQueue(dlq, o)
	switch o.Method {
	case RedriveManual:
		return RedriveManual, nil
	case RedriveNative:
		if fifo != "" {
			return "", fmt.Errorf("%w (FIFO queue %s)", ErrNativeFIFO, fifo)
		}
		return RedriveNative, nil
	case RedriveAuto:
		switch {
		case !o.Filter.zero():
			res.FallbackReason = "filters need the manual move"
			return RedriveManual, nil
		case fifo != "":
			res.FallbackReason = fifoFallback
			return RedriveManual, nil
		}
		return RedriveNative, nil
	}
	return "", fmt.Errorf("inspect: unknown redrive method %q", o.Method)
}

// fifoQueue names the FIFO queue a native move would involve — the DLQ, or the destination it
// would be given — or returns "" when there is none. (SQS requires a FIFO queue's DLQ to be FIFO
// too, so the DLQ's type is its source queues' type.)
func fifoQueue(dlq QueueStats, o *RedriveOptions) string {
	dest := o.To
	dest = cmp.Or(dest, o.Source)
	switch {
	case dlq.FIFO || awsarn.IsFIFO(dlq.URL):
		return awsarn.QueueName(dlq.URL)
	case awsarn.IsFIFO(dest):
		return awsarn.QueueName(dest)
	}
	return ""
}
