package devrun

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"
)

func TestServeConsoleSaysWhere(t *testing.T) {
	t.Parallel()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	var said string
	stop := ServeConsole(context.Background(), "127.0.0.1:0", cfg, "JobkitState", func(s string) { said = s })
	defer stop()
	require.Regexp(t, `^dev: console at http://127\.0\.0\.1:\d+/ `, said)
	url := strings.Fields(said)[3]
	res, err := http.Get(url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))

	off := ServeConsole(context.Background(), "off", cfg, "JobkitState", func(s string) { t.Errorf("said %s", s) })
	off()
}
