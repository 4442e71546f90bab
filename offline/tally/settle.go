package tally

// End is where the jobs are when a run ends, as read from the stack.
type End struct {
	// Succeeded, when non-nil, is the run's own evidence of success, by job id (an effect
	// applied, a COMPLETED idempotency record). Nil trusts the runtime: a job succeeded when the
	// mapping deleted a message of it after a run that did not dead-letter it.
	Succeeded map[string]bool
	// InDLQ holds the ids of the jobs found in a dead-letter queue.
	InDLQ map[string]bool
	// OnQueue is, per queue name, the number of messages still on the queue: waiting, delayed
	// or in flight.
	OnQueue map[string]int
	// UnknownDead is, per queue name, the number of messages in its dead-letter queue that a
	// listing could not tell apart: not listed (a FIFO queue shows the head of each group) or
	// without a job id.
	UnknownDead map[string]int
}

// Tally sorts a run's jobs by where they ended.
type Tally struct {
	// Jobs is the number of jobs sorted; Succeeded, Cancelled and Dead count three of the five
	// sorts.
	Jobs, Succeeded, Cancelled, Dead int
	// Stranded are the jobs whose state never ended: still on their queue, waiting, in flight
	// or retrying.
	Stranded []Job
	// Lost are the jobs neither succeeded, nor dead, nor on their queue.
	Lost []Job
}

// Settle sorts jobs by where they are at the end; the lists keep the order of jobs.
//
// A job succeeded, or found in a dead-letter queue, is that. The others are matched, per queue,
// against the messages a listing could not tell apart, which are counts: a job the runtime
// dead-lettered takes one of its dead-letter queue's unknown messages (dead); a job last known on
// its queue takes one of the messages still there (stranded); any job left then takes what is
// left of either, dead first; the rest are lost. Counts are exact; when the queues still hold
// messages, which job is which is the likeliest guess.
func Settle(jobs []Job, end End) Tally {
	t := Tally{Jobs: len(jobs)}
	dead, left := clone(end.UnknownDead), clone(end.OnQueue)
	var open []Job
	for _, j := range jobs {
		switch {
		case j.Cancelled && j.DeletedAfterRun:
			t.Cancelled++ // deleted unrun: not a success, not lost
		case succeeded(j, end):
			t.Succeeded++
		case end.InDLQ[j.ID]:
			t.Dead++
		default:
			open = append(open, j)
		}
	}
	var stranded, also []Job
	open, also = take(open, dead, func(j Job) bool { return j.Phase == DeadLettered })
	t.Dead += len(also)
	open, stranded = take(open, left, Job.onQueue)
	open, also = take(open, dead, nil)
	t.Dead += len(also)
	open, also = take(open, left, nil)
	stranded = append(stranded, also...)
	t.Stranded, t.Lost = inOrder(jobs, stranded), open
	return t
}

func succeeded(j Job, end End) bool {
	if end.Succeeded != nil {
		return end.Succeeded[j.ID]
	}
	return j.DeletedAfterRun
}

// take moves the jobs that match (nil: any) into the free places of their queue in slots, and
// returns the jobs left and those taken.
func take(jobs []Job, slots map[string]int, match func(Job) bool) (left, taken []Job) {
	for _, j := range jobs {
		if (match == nil || match(j)) && slots[j.Queue] > 0 {
			slots[j.Queue]--
			taken = append(taken, j)
			continue
		}
		left = append(left, j)
	}
	return left, taken
}

// inOrder returns sub in the order its jobs have in all.
func inOrder(all, sub []Job) []Job {
	in := map[string]bool{}
	for _, j := range sub {
		in[j.ID] = true
	}
	var out []Job
	for _, j := range all {
		if in[j.ID] {
			out = append(out, j)
		}
	}
	return out
}

func clone(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
