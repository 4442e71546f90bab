package devstack_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobkit-go/jobkit/offline/devstack"
	"github.com/jobkit-go/jobkit/offline/esm"
	"github.com/jobkit-go/jobkit/testkit/awstest"
)

// Handlers of a plain CDK app's Node.js and Python functions, as its assets hold them: each writes
// the bodies of its batch to a file of OUT_DIR (the machine's interpreters have no AWS SDK) and
// reports the body "fail" as a batch item failure.
var interpretedAssets = map[string]map[string]string{
	"nodejs20.x": {"index.mjs": `import { writeFileSync } from 'node:fs';
export const handler = async (event, context) => {
  const failed = [];
  for (const r of event.Records) {
    writeFileSync(process.env.OUT_DIR + '/' + r.messageId, 'node:' + r.body + ':' + process.env.AWS_LAMBDA_FUNCTION_NAME + ':' + (context.getRemainingTimeInMillis() > 0));
    if (r.body === 'fail') failed.push({ itemIdentifier: r.messageId });
  }
  return { batchItemFailures: failed };
};
`},
	"python3.12": {"app.py": `import os

def handler(event, context):
    failed = []
    for r in event["Records"]:
        with open(os.path.join(os.environ["OUT_DIR"], r["messageId"]), "w") as f:
            f.write("python:" + r["body"] + ":" + context.function_name + ":" + str(context.get_remaining_time_in_millis() > 0))
        if r["body"] == "fail":
            failed.append({"itemIdentifier": r["messageId"]})
    return {"batchItemFailures": failed}
`},
}

// A plain app's Node.js and Python functions run offline as Lambda runs them: the asset is the
// code, this machine's interpreter runs jobkit's Runtime API loop around the handler the template
// names, the handler gets its event and context, and its batch item failures come back.
func TestInterpretedFunctionsRun(t *testing.T) {
	t.Parallel()
	for runtime, handler := range map[string]string{"nodejs20.x": "index.handler", "python3.12": "app.handler"} {
		t.Run(runtime, func(t *testing.T) {
			t.Parallel()
			cfg := awstest.Config(t)
			ctx := context.Background()
			out := t.TempDir()
			dir := fixture(t, time.Now().Add(time.Hour))
			writeAsset(t, dir, "interpreted", interpretedAssets[runtime])
			editTemplate(t, filepath.Join(dir, "JobkitWorkers.template.json"), func(tpl map[string]any) {
				fn := tpl["Resources"].(map[string]any)["EchoFunction8D469E43"].(map[string]any)
				fn["Metadata"] = map[string]any{"aws:asset:path": "asset.interpreted"} // a plain app's: no jobkit metadata
				p := fn["Properties"].(map[string]any)
				p["Runtime"], p["Handler"] = runtime, handler
				p["Environment"].(map[string]any)["Variables"].(map[string]any)["OUT_DIR"] = out
			})
			var settled esm.Settled
			up := upConfig(t, cfg, dir)
			up.Config.OnBatch = func(_ string, rep esm.BatchReport) { settled.Record(rep) }
			r, err := devstack.Up(ctx, up)
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Down(context.Background()) })
			fn := r.Deployment.Functions[0]
			require.Empty(t, fn.Unrunnable)
			require.Equal(t, filepath.Join(dir, "asset.interpreted"), fn.TaskRoot)

			q := sqs.NewFromConfig(cfg)
			echo := r.Deployment.Queue("EchoQueue2E8F3C41")
			var ids []string
			for _, body := range []string{"a", "fail"} {
				res, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(echo.URL), MessageBody: aws.String(body)})
				require.NoError(t, err)
				ids = append(ids, aws.ToString(res.MessageId))
			}
			lang := map[string]string{"nodejs20.x": "node", "python3.12": "python"}[runtime]
			for i, body := range []string{"a", "fail"} {
				var got []byte
				require.Eventually(t, func() bool { got, err = os.ReadFile(filepath.Join(out, ids[i])); return err == nil }, time.Minute, 200*time.Millisecond)
				assert.Equal(t, lang+":"+body+":"+fn.Name+":"+map[string]string{"node": "true", "python": "True"}[lang], string(got))
			}
			// The mapping read the handler's batchItemFailures: the failed record goes back to the
			// queue, the other is deleted.
			require.Eventually(t, func() bool {
				return settled.Deleted(ids[0]) && settled.Failed(ids[1])
			}, time.Minute, 200*time.Millisecond)
			assert.False(t, settled.Deleted(ids[1]) || settled.Failed(ids[0]))
		})
	}
}

func editTemplate(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var tpl map[string]any
	require.NoError(t, json.Unmarshal(raw, &tpl))
	edit(tpl)
	raw, err = json.Marshal(tpl)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, raw, 0o644))
}
