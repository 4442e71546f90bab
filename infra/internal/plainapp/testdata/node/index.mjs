// The Node.js function of the plain CDK app: for each SQS record it writes "node:<body>" to a file
// of OUT_DIR named by the message id, and reports the body "fail" as a batch item failure.
import { writeFileSync } from 'node:fs';

export const handler = async (event) => {
  const failed = [];
  for (const r of event.Records) {
    writeFileSync(process.env.OUT_DIR + '/' + r.messageId, 'node:' + r.body);
    if (r.body === 'fail') failed.push({ itemIdentifier: r.messageId });
  }
  return { batchItemFailures: failed };
};
