package jobs

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jobkit-go/jobkit/jobs/contract"
	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// EnvelopeError reports a message body that is not a job this runtime can read. The runtime
// dead-letters such a message at once with Reason (ReasonMalformed or ReasonVersion).
type EnvelopeError struct {
	Reason string // contract.ReasonMalformed or contract.ReasonVersion
	Err    error
}

// Error describes the failure.
func (e *EnvelopeError) Error() string { return "jobs: envelope " + e.Reason + ": " + errString(e.Err) }

// Unwrap returns Err.
func (e *EnvelopeError) Unwrap() error { return e.Err }

// DeadLetterReason returns Reason: an EnvelopeError is permanent.
func (e *EnvelopeError) DeadLetterReason() string { return e.Reason }

// DecodeEnvelope decodes an SQS message body into an Envelope and checks it: the JSON must be an
// object, v must be EnvelopeVersion, id and kind must be set. Errors are *EnvelopeError.
//
// It accepts exactly what encoding/json accepts (and decodes it to the same values), with a fast
// path for ordinary envelopes; FuzzDecodeEnvelope checks the two agree. Args is a copy: the
// caller may keep or modify it.
func DecodeEnvelope(body string) (Envelope, error) {
	var h wire.Header
	if args, ok := wire.DecodeHeader(body, &h, nil, nil); ok {
		env := envelopeOf(&h)
		if args != "" {
			env.Args = json.RawMessage(args)
		}
		return env, checkEnvelope(&env, nil)
	}
	env, _, err := decodeEnvelopeSlow(body)
	return env, err
}

// decodeEnvelope is DecodeEnvelope for the runtime: env.Args is left nil and the args are
// returned as a string sharing body's memory (or, from the slow path, memory nothing else
// refers to), so they are never copied. With pd, the args of a kind pd knows are decoded in the
// same pass (see preDecoder).
func decodeEnvelope(body string, env *Envelope, pd *preDecoder) (args string, err error) {
	var h wire.Header
	var dates *wire.DateCache
	var onArgs wire.ArgsFunc
	if pd != nil {
		dates, onArgs = &pd.dates, pd.decode
	}
	if args, ok := wire.DecodeHeader(body, &h, dates, onArgs); ok {
		*env = envelopeOf(&h)
		return args, checkEnvelope(env, nil)
	}
	if pd != nil {
		pd.reset()
	}
	var raw json.RawMessage
	*env, raw, err = decodeEnvelopeSlow(body)
	env.Args = nil
	return wire.StringOf(raw), err
}

// envelopeOf is the Envelope of h, without args.
func envelopeOf(h *wire.Header) Envelope {
	return Envelope{V: h.V, ID: h.ID, Kind: h.Kind, EnqueuedAt: h.EnqueuedAt, Key: h.Key, Trace: h.Trace, Batch: h.Batch}
}

// decodeEnvelopeSlow is decodeEnvelope through encoding/json (kept apart so the fast path's
// Envelope stays on the stack).
func decodeEnvelopeSlow(body string) (Envelope, json.RawMessage, error) {
	var env Envelope
	err := json.Unmarshal([]byte(body), &env)
	return env, env.Args, checkEnvelope(&env, err)
}

// decodeEnvelopeReference is the plain encoding/json decoder DecodeEnvelope must agree with.
func decodeEnvelopeReference(body string) (Envelope, error) {
	var env Envelope
	err := json.Unmarshal([]byte(body), &env)
	return env, checkEnvelope(&env, err)
}

func checkEnvelope(env *Envelope, err error) error {
	switch {
	case err != nil:
		if env.V != 0 && env.V != EnvelopeVersion {
			return &EnvelopeError{Reason: contract.ReasonVersion, Err: fmt.Errorf("version %d: %w", env.V, err)}
		}
		return &EnvelopeError{Reason: contract.ReasonMalformed, Err: err}
	case env.V == 0:
		return &EnvelopeError{Reason: contract.ReasonMalformed, Err: errors.New(`no "v" (envelope version)`)}
	case env.V != EnvelopeVersion:
		return &EnvelopeError{Reason: contract.ReasonVersion, Err: fmt.Errorf("version %d, this runtime reads %d", env.V, EnvelopeVersion)}
	case env.ID == "":
		return &EnvelopeError{Reason: contract.ReasonMalformed, Err: errors.New(`empty "id"`)}
	case env.Kind == "":
		return &EnvelopeError{Reason: contract.ReasonMalformed, Err: errors.New(`empty "kind"`)}
	}
	return nil
}

// bytesOf views a string's bytes without copying; the callee must not modify them.
func bytesOf(s string) []byte { return wire.BytesOf(s) }

// smallDecimal parses a short decimal integer as strconv.ParseInt does, or reports false (see
// wire.SmallDecimal).
func smallDecimal(s string) (int64, bool) { return wire.SmallDecimal(s) }
