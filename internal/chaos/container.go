package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"syscall"
	"time"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/offline/devstack"
)

// DefaultContainerKillRate is the default Config.ContainerKillRate.
const DefaultContainerKillRate = 0.25

var transcodeDoneNeedle = []byte(samplejobs.TranscodeDoneMessage)

// transcodeDone returns the job id of a transcode's done line, if line is one.
func transcodeDone(line []byte) (string, bool) {
	if !bytes.Contains(line, transcodeDoneNeedle) {
		return "", false
	}
	var rec struct {
		Msg   string `json:"msg"`
		JobID string `json:"job_id"`
	}
	i := bytes.IndexByte(line, '{')
	if i < 0 || json.Unmarshal(bytes.TrimSpace(line[i:]), &rec) != nil || rec.Msg != samplejobs.TranscodeDoneMessage {
		return "", false
	}
	return rec.JobID, true
}

// findContainer remembers the name of the transcode worker's container, if it runs in one.
func (r *runner) findContainer(s *Stack) {
	if c := s.Container(samplejobs.KindTranscodeVideo); c != nil {
		r.container = devstack.ContainerName(*c)
	}
}

// onJobStart sees each job body's start: every round(1/ContainerKillRate)-th first start of a
// short transcode has the transcode container's process killed (SIGKILL) 2 to 32 ms later, while
// the job works. Only first starts count, so a job is killed at most once by its own start (it
// may die with the other job of a killed process too): counting every start, a pair of jobs the
// restarted process took again together could be killed on each delivery until dead-lettered.
// The short transcodes are enqueued only once the long job is done, so the long job's one run is
// never in a process that is killed.
func (r *runner) onJobStart(jobID string, attempt int) {
	if !strings.HasPrefix(jobID, TranscodeIDPrefix) {
		return
	}
	r.transcodeStarts.Add(1)
	if r.cfg.ContainerKillRate <= 0 || r.container == "" || attempt != 1 {
		return
	}
	n := r.transcodeFirstStarts.Add(1)
	every := max(int64(math.Round(1/r.cfg.ContainerKillRate)), 1)
	if n%every != every/2 {
		return
	}
	delay := time.Duration(2+r.float()*30) * time.Millisecond
	go func() {
		time.Sleep(delay)
		r.devMu.Lock()
		dev := r.dev
		r.devMu.Unlock()
		if dev == nil {
			return
		}
		if t := dev.Task(r.container); t != nil && t.Signal(syscall.SIGKILL) {
			r.containerKills.Add(1)
		}
	}()
}

// onJobDone sees each transcode's done line; the long job's closes longDone.
func (r *runner) onJobDone(jobID string) {
	if jobID == r.plan.Long.ID {
		r.longDoneOnce.Do(func() { close(r.longDone) })
	}
}

// enqueueTranscodes enqueues the short transcodes once the long job is done.
func (r *runner) enqueueTranscodes(ctx context.Context, enqueue func([]*PlannedJob) error) error {
	if len(r.plan.Transcode) == 0 {
		return nil
	}
	select {
	case <-r.longDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	batch := make([]*PlannedJob, len(r.plan.Transcode))
	for i := range r.plan.Transcode {
		batch[i] = &r.plan.Transcode[i]
	}
	return enqueue(batch)
}
