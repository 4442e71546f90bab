package chaos

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/instrument"
	"github.com/jobkit-go/jobkit/functions/samplejobs"
	"github.com/jobkit-go/jobkit/jobs/state"
)

// A batch callback counts by its committed effect: a body that started twice (its first
// completion failed, so the claim was released and the job ran again) is one callback; an effect
// committed twice is a duplicate; none is missing.
func TestCountBatchesByCommittedEffect(t *testing.T) {
	r := &runner{cfg: Config{Progress: io.Discard}, out: newOutputWatch(io.Discard, nil), batchIDs: []string{"b1", "b2", "b3"}}
	for _, id := range []string{"b1", "b1", "b2", "b3"} {
		r.out.readCallback([]byte(`{"level":"INFO","msg":"` + samplejobs.BatchDoneMessage + `","batch_id":"` + id + `"}`))
	}
	effects := map[string]instrument.EffectCount{
		state.CallbackID("b1"): {Applied: 1},
		state.CallbackID("b2"): {Applied: 2},
	}
	var rep Report
	r.countBatches(&rep, effects)
	require.Equal(t, Report{Batches: 3, Callbacks: 2, DuplicateCallbacks: 1, MissingCallbacks: 1},
		Report{Batches: rep.Batches, Callbacks: rep.Callbacks, DuplicateCallbacks: rep.DuplicateCallbacks, MissingCallbacks: rep.MissingCallbacks})
}
