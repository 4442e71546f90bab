package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs/contract"
)

func TestRedrivePolicyError(t *testing.T) {
	t.Parallel()
	require.Contains(t, (&redrivePolicyError{MaxReceiveCount: 8}).Error(), "received 8 times with no outcome reported: moved by the queue's redrive policy")
	require.Contains(t, (&redrivePolicyError{}).Error(), "received the queue's maxReceiveCount times")
	require.Equal(t, contract.ReasonRedrivePolicy, (&redrivePolicyError{}).DeadLetterReason())
}
