package jobs

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strings"
)

// Traces follow a job from its producer to its worker as a W3C traceparent
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", https://www.w3.org/TR/trace-context/):
//
//   - the Client writes one into every envelope: EnqueueOpts.Trace, else the context's
//     (ContextWithTrace; in a job, the job's own trace, continued with a new parent id), else a
//     new one;
//   - the runtime reads the envelope's trace, or, when the envelope has none, SQS's AWSTraceHeader
//     system attribute (an X-Ray header); the job's context carries it (TraceFromContext), every
//     log line about the job has its trace_id, and the batch's metrics line lists the trace ids;
//   - a dead-lettered copy keeps the body, so a redriven job keeps its trace.

type traceKey struct{}

// ContextWithTrace returns ctx carrying traceparent: jobs enqueued with it continue that trace.
// An invalid traceparent is ignored (ctx is returned unchanged).
func ContextWithTrace(ctx context.Context, traceparent string) context.Context {
	if !validTraceparent(traceparent) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceparent)
}

// TraceFromContext returns the traceparent ctx carries (a job's context carries its job's), or "".
func TraceFromContext(ctx context.Context) string {
	s, _ := ctx.Value(traceKey{}).(string)
	return s
}

// TraceID returns the 32-hex trace id of a traceparent, or "" if it is not one.
func TraceID(traceparent string) string {
	if !validTraceparent(traceparent) {
		return ""
	}
	return traceparent[3:35]
}

// validTraceparent reports whether s is a version-00 W3C traceparent: lowercase hex fields of 32,
// 16 and 2 digits, a trace id and a parent id that are not all zeros.
func validTraceparent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	return lowerHex(s[3:35]) && lowerHex(s[36:52]) && lowerHex(s[53:55]) &&
		s[3:35] != strings.Repeat("0", 32) && s[36:52] != strings.Repeat("0", 16)
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// newTraceparent returns a traceparent of a new trace: random trace and parent ids, sampled.
func newTraceparent() string {
	var id [24]byte
	fillRandom(id[:])
	return buildTraceparent(hex.EncodeToString(id[:16]), id[16:], "01")
}

// childTraceparent continues parent's trace with a new parent id (the enqueue is a new span).
func childTraceparent(parent string) string {
	var span [8]byte
	fillRandom(span[:])
	return buildTraceparent(parent[3:35], span[:], parent[53:55])
}

func buildTraceparent(traceID string, span []byte, flags string) string {
	var b strings.Builder
	b.Grow(55)
	b.WriteString("00-")
	b.WriteString(traceID)
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(span))
	b.WriteByte('-')
	b.WriteString(flags)
	return b.String()
}

// fillRandom fills b with random bytes, never all zeros (W3C: an all-zero id is invalid).
func fillRandom(b []byte) {
	for {
		nonzero := false
		for i := 0; i < len(b); i += 8 {
			v := rand.Uint64()
			for j := 0; j < 8 && i+j < len(b); j++ {
				b[i+j] = byte(v >> (8 * j))
				nonzero = nonzero || b[i+j] != 0
			}
		}
		if nonzero {
			return
		}
	}
}

// traceFromXRay converts an X-Ray trace header, as SQS passes it in the AWSTraceHeader system
// attribute ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"), to a
// traceparent: the trace id is the root's epoch and unique parts, the parent id is Parent (a new
// one when absent), the flags say Sampled=1. It reports false for a header without a valid root.
func traceFromXRay(h string) (string, bool) {
	var root, parent, flags = "", "", "00"
	for _, part := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			// 1-<8 hex epoch>-<24 hex unique>
			if len(v) == 35 && v[:2] == "1-" && v[10] == '-' {
				root = strings.ToLower(v[2:10] + v[11:])
			}
		case "Parent":
			parent = strings.ToLower(v)
		case "Sampled":
			if v == "1" {
				flags = "01"
			}
		}
	}
	if len(root) != 32 || !lowerHex(root) {
		return "", false
	}
	if len(parent) == 16 && lowerHex(parent) && parent != strings.Repeat("0", 16) {
		tp := "00-" + root + "-" + parent + "-" + flags
		return tp, validTraceparent(tp)
	}
	var span [8]byte
	fillRandom(span[:])
	tp := buildTraceparent(root, span[:], flags)
	return tp, validTraceparent(tp)
}
