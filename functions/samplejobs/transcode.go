package samplejobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobkit-go/jobkit/jobs"
)

// KindTranscodeVideo is TranscodeVideo's kind.
const KindTranscodeVideo = "video.transcode"

// TranscodeVideo is a long job: it simulates transcoding a video for Seconds seconds.
type TranscodeVideo struct {
	VideoID string `json:"video_id"`
	Seconds int    `json:"seconds"`
}

// Kind implements jobs.JobArgs.
func (TranscodeVideo) Kind() string { return KindTranscodeVideo }

// TranscodeWorker runs TranscodeVideo jobs, one step per simulated second. It relies on the
// runtime's heartbeat to keep the message invisible while it works, and stops as soon as its
// context ends (the job's deadline, before the Lambda timeout), returning a retryable error.
type TranscodeWorker struct {
	Step   time.Duration // one simulated second; default 1s
	Logger *slog.Logger  // progress lines; nil means slog.Default()
}

// Work implements jobs.Worker.
func (w *TranscodeWorker) Work(ctx context.Context, job *jobs.Job[TranscodeVideo]) error {
	v := job.Args
	if v.VideoID == "" || v.Seconds < 0 {
		return jobs.Cancel(errors.New("samplejobs: a transcode needs a video_id and seconds >= 0"))
	}
	step := w.Step
	if step <= 0 {
		step = time.Second
	}
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(step)
	defer t.Stop()
	for done := 0; done < v.Seconds; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("samplejobs: transcode of %s stopped after %d of %d s: %w", v.VideoID, done, v.Seconds, context.Cause(ctx))
		case <-t.C:
			done++
			if done%10 == 0 && done < v.Seconds {
				log.LogAttrs(ctx, slog.LevelInfo, "transcode progress", slog.String("job_id", job.ID),
					slog.String("video_id", v.VideoID), slog.Int("done", done), slog.Int("of", v.Seconds))
			}
		}
	}
	// The sample's output: one line per finished transcode (a real worker would store the file).
	log.LogAttrs(ctx, slog.LevelInfo, TranscodeDoneMessage, slog.String("job_id", job.ID),
		slog.String("video_id", v.VideoID), slog.Int("seconds", v.Seconds), slog.Int("attempt", job.Attempt))
	return nil
}

// TranscodeDoneMessage is the message of the log line TranscodeWorker writes when a transcode
// finishes, with attributes job_id, video_id, seconds and attempt: the sample's output, which
// the offline stack's end-to-end checks read.
const TranscodeDoneMessage = "transcode done"
