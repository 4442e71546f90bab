// Sends one jobkit job and prints {"id": ..., "messageId": ...}:
//
//   node dist/cli.js --queue-url URL --kind email.send --args '{"to": "ada@example.com"}'
//
// Options: --id, --key, --group-id, --dedup-id, --delay-seconds, --trace. Bad input exits 2
// before any AWS call.

import { parseArgs } from "node:util";
import { SQSClient } from "@aws-sdk/client-sqs";
import { enqueue, InvalidJobError } from "./jobkit.js";

async function main(): Promise<number> {
  const { values: v } = parseArgs({
    options: {
      "queue-url": { type: "string" },
      kind: { type: "string" },
      args: { type: "string" },
      id: { type: "string" },
      key: { type: "string" },
      "group-id": { type: "string" },
      "dedup-id": { type: "string" },
      "delay-seconds": { type: "string" },
      trace: { type: "string" },
    },
    strict: true,
  });
  let args: unknown;
  try {
    args = JSON.parse(v.args ?? "");
  } catch (e) {
    console.error(`jobkit: --args is not JSON: ${(e as Error).message}`);
    return 2;
  }
  try {
    const job = await enqueue(new SQSClient({}), v["queue-url"] ?? "", {
      kind: v.kind ?? "",
      args,
      id: v.id,
      key: v.key,
      groupId: v["group-id"],
      dedupId: v["dedup-id"],
      delaySeconds: v["delay-seconds"] === undefined ? undefined : Number(v["delay-seconds"]),
      trace: v.trace,
    });
    console.log(JSON.stringify({ id: job.id, messageId: job.messageId }));
    return 0;
  } catch (e) {
    if (e instanceof InvalidJobError) {
      console.error(e.message);
      return 2;
    }
    throw e;
  }
}

process.exitCode = await main();
