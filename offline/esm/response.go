package esm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Verdict is what the event source mapping makes of one invocation.
type Verdict int

// Verdicts.
const (
	// AllSucceeded: every message of the batch is deleted.
	AllSucceeded Verdict = iota + 1
	// Partial: the messages the function listed in batchItemFailures return to the queue after
	// their visibility timeout; the others are deleted.
	Partial
	// BatchFailed: nothing is deleted; the whole batch returns to the queue after its visibility
	// timeout (function error, timeout, crash, init error, or an invalid partial response).
	BatchFailed
)

func (v Verdict) String() string {
	switch v {
	case AllSucceeded:
		return "all_succeeded"
	case Partial:
		return "partial"
	case BatchFailed:
		return "batch_failed"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// InvalidResponseError says why a function's partial batch response counts as a failure of the
// whole batch.
type InvalidResponseError struct{ Reason string }

func (e *InvalidResponseError) Error() string { return "esm: invalid batch response: " + e.Reason }

// ParseBatchResponse applies ReportBatchItemFailures to a successful invocation's response, exactly
// as "Handling errors for an SQS event source in Lambda" documents it
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html, "Success and
// failure conditions"):
//
//	Lambda treats a batch as a complete success if your function returns any of the following:
//	an empty batchItemFailures list, a null batchItemFailures list, an empty EventResponse,
//	a null EventResponse.
//	Lambda treats a batch as a complete failure if your function returns any of the following:
//	an invalid JSON response, an empty string itemIdentifier, a null itemIdentifier, an
//	itemIdentifier with a bad key name, an itemIdentifier value with a message ID that doesn't exist.
//
// inBatch holds the message ids of the batch. It returns the ids to return to the queue (nil for a
// complete success), or an *InvalidResponseError for a complete failure. Readings where the page is
// silent, chosen to lose nothing: keys match case-sensitively (Go's encoding/json would not); a
// response that is valid JSON but not an object or null (a string, a number, a list), a
// batchItemFailures that is not a list, and a list entry that is not an object are invalid
// responses; listing an id twice lists it once.
func ParseBatchResponse(payload []byte, inBatch map[string]bool) ([]string, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil // empty or null EventResponse
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil || top == nil {
		return nil, &InvalidResponseError{Reason: "not a JSON object"}
	}
	raw, ok := top["batchItemFailures"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil // empty EventResponse, or null batchItemFailures
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &InvalidResponseError{Reason: "batchItemFailures is not a list"}
	}
	var failed []string
	seen := map[string]bool{}
	for i, item := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d] is not an object", i)}
		}
		idRaw, ok := fields["itemIdentifier"]
		if !ok {
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d] has no itemIdentifier key", i)}
		}
		var id *string
		if err := json.Unmarshal(idRaw, &id); err != nil {
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier is not a string", i)}
		}
		switch {
		case id == nil:
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier is null", i)}
		case *id == "":
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier is empty", i)}
		case !inBatch[*id]:
			return nil, &InvalidResponseError{Reason: fmt.Sprintf("batchItemFailures[%d].itemIdentifier %q is not a message of the batch", i, *id)}
		}
		if !seen[*id] {
			seen[*id] = true
			failed = append(failed, *id)
		}
	}
	return failed, nil
}
