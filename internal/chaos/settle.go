package chaos

import (
	"cmp"
	"sort"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/offline/tally"
)

// inDLQ reports whether job id was in a dead-letter queue: when the redrive began, or at the end.
func (st State) inDLQ(id string) bool {
	return st.Dead[id] > 0 || (st.Redrive != nil && st.Redrive.Before[id])
}

// last returns what the run last knew of planned job j: Unseen when no worker reported on it.
func (st State) last(j *PlannedJob) tally.Job {
	kind := j.Args.Kind()
	l, ok := st.Last[j.ID]
	if !ok {
		l = tally.Job{ID: j.ID}
	}
	l.Kind = cmp.Or(l.Kind, kind)
	if l.Queue == "" {
		l.Queue = samplejobs.Queues[kind]
	}
	return l
}

// settle sorts the planned jobs by where they ended (package tally): applied, dead, stranded on
// their queue, or lost; then finds the redriven jobs that went missing. It names the lost,
// stranded and redrive-lost jobs.
func (r *Report) settle(p *Plan, st State) {
	end := tally.End{Succeeded: map[string]bool{}, InDLQ: map[string]bool{}, OnQueue: st.Left, UnknownDead: st.UnknownDead}
	var last []tally.Job
	for _, j := range p.All() {
		if st.Effects[j.ID].Applied > 0 {
			end.Succeeded[j.ID] = true
		}
		if st.inDLQ(j.ID) {
			end.InDLQ[j.ID] = true
		}
		last = append(last, st.last(j))
	}
	t := tally.Settle(last, end)
	r.Lost, r.Stranded = len(t.Lost), len(t.Stranded)
	r.LostJobs, r.StrandedJobs = tally.Lines(t.Lost, 0), tally.Lines(t.Stranded, 0)
	stranded := map[string]bool{}
	for _, j := range t.Stranded {
		stranded[j.ID] = true
	}
	r.redriveLost(st, stranded)
}

// redriveLost counts the jobs the redrive should have brought back (those in the dead-letter
// queues when it began) that neither ran since, nor are back in a dead-letter queue, nor are
// stranded on their queue.
func (r *Report) redriveLost(st State, stranded map[string]bool) {
	if st.Redrive == nil {
		return
	}
	var ids []string
	for id := range st.Redrive.Before {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var lost []tally.Job
	for _, id := range ids {
		r.Redriven++
		if st.Runs[id] > st.Redrive.RunsBefore[id] || st.Dead[id] > 0 || stranded[id] {
			continue
		}
		j, ok := st.Last[id]
		if !ok {
			j = tally.Job{ID: id, Phase: tally.DeadLettered}
		}
		lost = append(lost, j)
	}
	r.RedriveLost, r.RedriveLostJobs = len(lost), tally.Lines(lost, 0)
}
