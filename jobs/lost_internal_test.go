package jobs

import "testing"

// The answers SQS gives a visibility change for a message that is no longer ours, and some that
// are not about the message at all.
func TestMessageLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code, message string
		lost          bool
	}{
		{"ReceiptHandleIsInvalid", "The input receipt handle is invalid.", true},
		{"AWS.SimpleQueueService.MessageNotInflight", "", true},
		{"InvalidParameterValue", "Value AQEB... for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.", true},
		// A deleted message.
		{"InvalidParameterValue", "Value AQEB... for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", true},
		{"InvalidParameterValue", "Value 43201 for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.", false},
		{"ThrottlingException", "Rate exceeded", false},
	} {
		if got := messageLost(c.code, c.message); got != c.lost {
			t.Errorf("messageLost(%q, %q) = %v, want %v", c.code, c.message, got, c.lost)
		}
	}
}
