package samplejobs_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/functions/samplejobs"
)

// The sample's log line says an email went out without naming the recipient (personal data).
func TestLogMailerLogsNoAddress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := samplejobs.LogMailer{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	require.NoError(t, m.Send(context.Background(), samplejobs.Email{To: "ada@example.com", Subject: "hi", IdempotencyKey: "k1"}))
	require.NotContains(t, buf.String(), "ada@")
	require.Contains(t, buf.String(), `"to_domain":"example.com"`)
	require.Contains(t, buf.String(), `"idempotency_key":"k1"`)
}
