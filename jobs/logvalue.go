package jobs

import (
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxLogValue is the most bytes of one value from job data (an id, a kind, a key, an error
// that quotes a body) that a log line carries. Producers are untrusted: a 1 MiB enqueued_at or
// a 100,000-digit number would otherwise reach a WARN line whole, and CloudWatch Logs bills every
// byte (and cuts events at 256 KiB). The full value stays in the message, the DLQ copy, and the
// CLI's --json output.
const maxLogValue = 1024

// LogString is slog.String for a value that comes from job data: longer than maxLogValue, it is
// cut at a UTF-8 boundary and ends with "…[+N bytes]".
func LogString(key, value string) slog.Attr {
	return slog.String(key, capLogValue(value))
}

func capLogValue(s string) string {
	if len(s) <= maxLogValue {
		return s
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[+" + strconv.Itoa(len(s)-cut) + " bytes]"
}

// logRecord writes one log line about a record, with the job attributes every line carries.
func (b *batch) logRecord(level slog.Level, r *record, msg string, err error, extra ...slog.Attr) {
	log := b.h.log
	ctx := b.ctx
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6+len(extra))
	attrs = append(attrs,
		LogString("job_id", r.row.ID), LogString("kind", r.row.Kind), slog.Int("attempt", r.row.Attempt),
		slog.String("message_id", r.msg.MessageID))
	if r.row.GroupID != "" {
		attrs = append(attrs, LogString("group_id", r.row.GroupID))
	}
	if id := TraceID(r.row.Trace); id != "" {
		attrs = append(attrs, slog.String("trace_id", id))
	}
	if r.pointer != nil {
		attrs = append(attrs, LogString("payload_key", r.pointer.Key))
	}
	if err != nil {
		attrs = append(attrs, LogString("error", err.Error()))
	}
	attrs = append(attrs, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
