package benchfix_test

import (
	"bufio"
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/internal/benchfix"
	"github.com/jobkit-go/jobkit/jobs"
)

func TestSampleEnvelopesAreStable(t *testing.T) {
	t.Parallel()
	a, b := benchfix.SampleEnvelopes(50), benchfix.SampleEnvelopes(50)
	assert.Equal(t, a, b)
	var buf bytes.Buffer
	require.NoError(t, benchfix.WriteSampleEnvelopes(&buf, 50))
	sc := bufio.NewScanner(&buf)
	i := 0
	for sc.Scan() {
		assert.Equal(t, a[i], sc.Text())
		env, err := jobs.DecodeEnvelope(sc.Text())
		require.NoError(t, err)
		assert.Equal(t, "bench.sample", env.Kind)
		i++
	}
	assert.Equal(t, 50, i)
	evs := benchfix.SampleEvents(25, 10)
	require.Len(t, evs, 3)
	assert.Len(t, evs[2].Records, 5)
	run := benchfix.NewBenchRunner(10)
	require.NoError(t, run(context.Background()))
}
