package jobs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidTraceparent(t *testing.T) {
	for s, ok := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00": true,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": false, // uppercase
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": false, // version
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": false, // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": false, // zero parent id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":    false,
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01": false,
		"": false,
	} {
		assert.Equal(t, ok, validTraceparent(s), s)
	}
	for range 100 {
		tp := newTraceparent()
		assert.True(t, validTraceparent(tp), tp)
		child := childTraceparent(tp)
		assert.True(t, validTraceparent(child), child)
		assert.Equal(t, TraceID(tp), TraceID(child), "a child continues the trace")
		assert.NotEqual(t, tp[36:52], child[36:52], "with a new parent id")
	}
}

// The X-Ray header SQS passes as AWSTraceHeader, with AWS's documented example.
func TestTraceFromXRay(t *testing.T) {
	for h, want := range map[string]string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00",
		"Root=1-5759E988-BD862E3FE1BE46A994272793;Parent=53995C3F42CD8AD8;Sampled=?": "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00",
		"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8":           "",
		"Parent=53995c3f42cd8ad8;Sampled=1":                                          "",
		"garbage":                                                                    "",
	} {
		got, ok := traceFromXRay(h)
		assert.Equal(t, want != "", ok, h)
		assert.Equal(t, want, got, h)
	}
	got, ok := traceFromXRay("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1")
	assert.True(t, ok)
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", TraceID(got), "no Parent: a new parent id in the same trace")
}

func TestContextWithTrace(t *testing.T) {
	ctx := context.Background()
	assert.Empty(t, TraceFromContext(ctx))
	assert.Empty(t, TraceFromContext(ContextWithTrace(ctx, "not a trace")), "an invalid trace is ignored")
	tp := newTraceparent()
	assert.Equal(t, tp, TraceFromContext(ContextWithTrace(ctx, tp)))
}
