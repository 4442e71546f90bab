package jobs

import (
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

// emfMaxValues is the most values EMF takes in one metric array.
const emfMaxValues = 100

var emfBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeMetrics writes the batch's EMF lines: one per job kind, and per 100 records of a kind for
// larger batches. end is when the batch's jobs ended: the metrics' timestamp.
func (h *sqsHandler) writeMetrics(records []record, end time.Time) {
	now := end.UnixMilli()
	if len(records) == 0 {
		return
	}
	kind0 := records[0].row.Kind
	single := true
	for i := 1; i < len(records) && single; i++ {
		single = records[i].row.Kind == kind0
	}
	if single { // most batches: one kind, its records in place
		label := h.kindLabel(kind0)
		for start := 0; start < len(records); start += emfMaxValues {
			chunk := records[start:min(start+emfMaxValues, len(records))]
			h.writeEMF(now, label, len(chunk), func(i int) *record { return &chunk[i] })
		}
		return
	}
	byLabel := map[string][]*record{}
	var labels []string
	for i := range records {
		label := h.kindLabel(records[i].row.Kind)
		if _, ok := byLabel[label]; !ok {
			labels = append(labels, label)
		}
		byLabel[label] = append(byLabel[label], &records[i])
	}
	for _, label := range labels {
		recs := byLabel[label]
		for start := 0; start < len(recs); start += emfMaxValues {
			chunk := recs[start:min(start+emfMaxValues, len(recs))]
			h.writeEMF(now, label, len(chunk), func(i int) *record { return chunk[i] })
		}
	}
}

// kindLabel is the Kind dimension of a record of kind: the kind when a worker runs it, else
// contract.KindUnknown.
func (h *sqsHandler) kindLabel(kind string) string {
	if kind != "" && h.lookup(kind) != nil {
		return kind
	}
	return contract.KindUnknown
}

// writeEMF writes one EMF line of n records (at(i)) of one kind label.
func (h *sqsHandler) writeEMF(now int64, label string, n int, at func(int) *record) {
	bp := emfBuffers.Get().(*[]byte)
	line := h.appendEMF((*bp)[:0], now, label, n, at)
	_, _ = h.cfg.Metrics.Write(line)
	*bp = line
	emfBuffers.Put(bp)
}

func (h *sqsHandler) appendEMF(b []byte, now int64, label string, n int, at func(int) *record) []byte {
	var succeeded, retried, snoozed, dead int
	for i := range n {
		r := at(i)
		if r.state.Load() != stateDone {
			retried++
			continue
		}
		switch r.out {
		case outSucceeded:
			succeeded++
		case outCancelled: // none of the four: it did not run
		case outSnoozed:
			snoozed++
		case outDead:
			dead++
		default:
			retried++
		}
	}
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, now, 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":"`+contract.MetricNamespace+`","Dimensions":[["`+contract.DimensionQueue+`"],["`+
		contract.DimensionQueue+`","`+contract.DimensionKind+`"]],"Metrics":[`+
		`{"Name":"`+contract.MetricSucceeded+`","Unit":"Count"},`+
		`{"Name":"`+contract.MetricRetried+`","Unit":"Count"},`+
		`{"Name":"`+contract.MetricSnoozed+`","Unit":"Count"},`+
		`{"Name":"`+contract.MetricDead+`","Unit":"Count"},`+
		`{"Name":"`+contract.MetricDuration+`","Unit":"Milliseconds"},`+
		`{"Name":"`+contract.MetricAttempt+`","Unit":"Count"}]}]},"`+contract.DimensionQueue+`":`...)
	b = appendJSONString(b, h.queueName)
	b = append(b, `,"`+contract.DimensionKind+`":`...)
	b = appendJSONString(b, label)
	b = appendTraceIDs(b, n, at)
	b = appendCount(b, contract.MetricSucceeded, succeeded)
	b = appendCount(b, contract.MetricRetried, retried)
	b = appendCount(b, contract.MetricSnoozed, snoozed)
	b = appendCount(b, contract.MetricDead, dead)
	b = append(b, `,"`+contract.MetricDuration+`":[`...)
	first := true
	for i := range n {
		r := at(i)
		if r.state.Load() == stateDone && r.ran {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendMillis(b, r.dur)
		}
	}
	b = append(b, `],"`+contract.MetricAttempt+`":[`...)
	first = true
	for i := range n {
		r := at(i)
		if r.state.Load() == stateDone && r.out != outSkipped && r.out != outNotStarted && r.out != outCancelled {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = strconv.AppendInt(b, int64(r.row.Attempt), 10)
		}
	}
	return append(b, "]}\n"...)
}

// appendTraceIDs appends the line's "trace_ids" property, the distinct trace ids of its records'
// jobs (CloudWatch Logs Insights finds the line by any of them), when a job has one.
func appendTraceIDs(b []byte, count int, at func(int) *record) []byte {
	var seen [emfMaxValues]string
	n := 0
next:
	for i := range count {
		id := TraceID(at(i).row.Trace)
		if id == "" {
			continue
		}
		for _, s := range seen[:n] {
			if s == id {
				continue next
			}
		}
		if n == 0 {
			b = append(b, `,"trace_ids":[`...)
		} else {
			b = append(b, ',')
		}
		seen[n] = id
		n++
		b = append(b, '"')
		b = append(b, id...) // lowercase hex: nothing to escape
		b = append(b, '"')
	}
	if n > 0 {
		b = append(b, ']')
	}
	return b
}

// appendMillis appends d in milliseconds with three decimals (microsecond precision).
func appendMillis(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

func appendCount(b []byte, name string, n int) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, int64(n), 10)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// sanitizeAttr replaces the characters SQS refuses in message attribute values (outside #x9, #xA,
// #xD, #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF, and invalid UTF-8) with U+FFFD.
func sanitizeAttr(s string) string {
	ok := true
	for _, r := range s {
		if !validAttrRune(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		if !validAttrRune(r) {
			r = utf8.RuneError
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

func validAttrRune(r rune) bool {
	switch {
	case r == utf8.RuneError:
		return false // also what ranging over invalid UTF-8 yields
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// truncateUTF8 cuts s to at most n bytes without splitting a character, marking the cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	if n <= len(mark) {
		return ""
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
