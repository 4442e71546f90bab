package inspect

import (
	"context"
	"fmt"
)

// nativeLeftReason is RedriveResult.RemainingReason after a native move that left messages.
const nativeLeftReason = "the move task did not move them: they were in flight (held by another reader) while it ran, or were dead-lettered after it started; run the redrive again"

// remaining checks what a move that ended without error left in the dead-letter queue: it reads
// the DLQ's depth into res.Remaining and says in res.RemainingReason what the other counts do not
// explain. A move that failed is reported as is (moveErr): its counts say what it did.
func (i *Inspector) remaining(ctx context.Context, dlqURL string, res *RedriveResult, moveErr error) error {
	if moveErr != nil {
		return moveErr
	}
	d, err := i.Depth(ctx, dlqURL)
	if err != nil {
		return fmt.Errorf("inspect: redrive: moved %d, then could not read what is left in the dead-letter queue: %w", res.Moved, err)
	}
	res.Remaining = d.Total()
	res.RemainingReason = remainingReason(res)
	return nil
}

// remainingReason says why res.Remaining messages are still in the DLQ, beyond what the manual
// move's counts already explain; "" when nothing is left unexplained.
func remainingReason(res *RedriveResult) string {
	if res.Method == RedriveNative {
		if res.Remaining > 0 {
			return nativeLeftReason
		}
		return ""
	}
	if n := res.Remaining - accounted(res); n > 0 {
		return fmt.Sprintf("%d dead-lettered while the redrive ran, or held by another reader at its end; run the redrive again", n)
	}
	return ""
}

// accounted returns how many messages the manual move's counts say it left in the dead-letter
// queue: Skipped + NoDestination + Returned + Failed + Unconfirmed + LeftInFlight.
func accounted(r *RedriveResult) int64 {
	return r.Skipped + r.NoDestination + r.Returned + r.Failed + r.Unconfirmed + r.LeftInFlight
}
