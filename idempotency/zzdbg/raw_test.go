package dbg

import (
	"context"
	"fmt"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jobkit-go/jobkit/localstack/awstest"
)

func TestRaw(t *testing.T) {
	cfg := awstest.Config(t)
	table := awstest.CreateTable(t, cfg, "idem", "id", "")
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.Retryer = logRetryer{retry.NewStandard()}
		if os.Getenv("NOKA") != "" {
			o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.DisableKeepAlives = true })
		}
	})
	for i := range 3000 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
}
