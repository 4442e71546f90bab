package jobs

import (
	"log/slog"
	"strconv"
	"unicode/utf8"
)

// MaxLogValue is the most bytes of one value from job data (an id, a kind, a key, an error
// that quotes a body) that a log line carries. Producers are untrusted: a 1 MiB enqueued_at or
// a 100,000-digit number would otherwise reach a WARN line whole, and CloudWatch Logs bills every
// byte (and cuts events at 256 KiB). The full value stays in the message, the DLQ copy, and the
// CLI's --json output.
const MaxLogValue = 1024

// LogString is slog.String for a value that comes from job data: longer than MaxLogValue, it is
// cut at a UTF-8 boundary and ends with "…[+N bytes]".
func LogString(key, value string) slog.Attr {
	return slog.String(key, capLogValue(value))
}

func capLogValue(s string) string {
	if len(s) <= MaxLogValue {
		return s
	}
	cut := MaxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[+" + strconv.Itoa(len(s)-cut) + " bytes]"
}
