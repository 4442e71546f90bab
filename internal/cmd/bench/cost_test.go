package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/testkit/faultproxy"
)

func TestCostMixes(t *testing.T) {
	t.Parallel()
	// 0.3 SQS requests × $0.40/M + 2 WRU × $0.625/M + 0.1 invocation × $0.20/M.
	require.InDelta(t, 0.12+1.25+0.02, costFloor.usdPerMillion(), 1e-9)
	// 1.2 SQS requests + 1 RRU × $0.125/M + 2 WRU + 0.1 invocation.
	require.InDelta(t, 0.48+0.125+1.25+0.02, costNaive.usdPerMillion(), 1e-9)

	st := faultproxy.Stats{APIs: map[string]faultproxy.APIStats{
		"SQS.SendMessageBatch":    {Requests: 110, Throttled: 10, Forwarded: 100},
		"SQS.ReceiveMessage":      {Requests: 150, Forwarded: 150},
		"DynamoDB.PutItem":        {Requests: 1000, Forwarded: 1000, WriteUnits: 1000},
		"DynamoDB.UpdateItem":     {Requests: 1000, Forwarded: 1000, WriteUnits: 1000},
		"DynamoDB.GetItem":        {Requests: 10, Forwarded: 10, ReadUnits: 5},
		"other.DescribeSomething": {Requests: 7, Forwarded: 7},
	}}
	m := mixOf(st, 40, 1000)
	require.Equal(t, costMix{SQSRequests: 0.25, WriteUnits: 2, ReadUnits: 0.005, Invocations: 0.04}, m, "the mix counts the requests the endpoint served, SQS and DynamoDB only")
}
