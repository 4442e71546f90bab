package zzscratch

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jobkit-go/jobkit/localstack/awstest"
	"github.com/jobkit-go/jobkit/localstack/deploy"
)

func TestScratch(t *testing.T) {
	cfg := awstest.Config(t)
	start := time.Now()
	d, err := deploy.Deploy(context.Background(), deploy.NewClients(cfg), &deploy.Options{
		CDKOut: "../../../cdk.out", Prefix: "scratch1-", BuildDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	t.Log("took", time.Since(start))
	if d != nil {
		b, _ := json.MarshalIndent(d, "", " ")
		t.Log(string(b))
		defer func() { t.Log("destroy", d.Destroy(context.Background())) }()
	}
	if err != nil {
		t.Fatal(err)
	}
}
