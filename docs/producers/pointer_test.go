package producers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/jobs"
	"github.com/jobkit-go/jobkit/jobs/contract"
)

// The schema describes the claim check as the Go client writes it and the runtime reads it: a
// pointer body validates against $defs/payloadPointer (and not as an envelope), what the schema
// accepts the runtime parses, and the dead-letter reason and attribute are listed.
func TestSchemaDescribesThePayloadPointer(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	f, err := os.Open(filepath.Join("..", "envelope.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	require.NoError(t, c.AddResource("envelope.schema.json", doc))
	pointer, err := c.Compile("envelope.schema.json#/$defs/payloadPointer")
	require.NoError(t, err)
	s, err := schemas()
	require.NoError(t, err)

	valid := func(body string) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
		require.NoError(t, err)
		return pointer.Validate(v)
	}
	ours := jobs.PayloadPointer{Bucket: "payloads", Key: "jobs/01JD3Q7X2V"}.Body()
	require.NoError(t, valid(ours))
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(ours))
	require.NoError(t, err)
	assert.Error(t, s[0].Validate(v), "a pointer is not an envelope")
	for _, body := range []string{
		`["com.amazon.sqs.javamessaging.MessageS3Pointer", {"s3BucketName": "b", "s3Key": "k"}]`,
		`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`,
	} {
		require.NoError(t, valid(body))
		_, ok := jobs.ParsePayloadPointer(body)
		assert.True(t, ok, body)
	}
	for _, body := range []string{`["other.Class",{"s3BucketName":"b","s3Key":"k"}]`, `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`} {
		assert.Error(t, valid(body), body)
		_, ok := jobs.ParsePayloadPointer(body)
		assert.False(t, ok, body)
	}

	attrs := map[string]any{contract.AttrReason: contract.ReasonPayloadUnavailable, contract.AttrPayloadSize: "5242912"}
	assert.NoError(t, s[1].Validate(attrs))
	var raw map[string]any
	b, err := os.ReadFile(filepath.Join("..", "envelope.schema.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, contract.PayloadPointerClass, raw["$defs"].(map[string]any)["payloadPointer"].(map[string]any)["prefixItems"].([]any)[0].(map[string]any)["enum"].([]any)[0])
}
