package esm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobkit-go/jobkit/offline/esm"
)

func TestSettled(t *testing.T) {
	t.Parallel()
	var s esm.Settled
	assert.False(t, s.Deleted("m1"), "nothing recorded yet")
	s.Record(esm.BatchReport{Deleted: []string{"m1"}, Failed: []string{"m2"}})
	s.Record(esm.BatchReport{Deleted: []string{"m3"}})
	assert.True(t, s.Deleted("m1"))
	assert.True(t, s.Deleted("m3"))
	assert.False(t, s.Deleted("m2"))
	assert.True(t, s.Failed("m2"))
	assert.False(t, s.Failed("m1"))
}
