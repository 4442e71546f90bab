// Enqueue jobkit jobs from TypeScript with the AWS SDK for JavaScript v3.
//
// A job is an SQS message whose body is the envelope of docs/envelope.schema.json; the Go workers
// run it exactly as if the Go client had sent it. This module writes that envelope, checks what
// it is given before any AWS call (InvalidJobError), and sends one job or a batch of them:
//
//   import { SQSClient } from "@aws-sdk/client-sqs";
//   import { enqueue } from "jobkit-producer";
//
//   const sqs = new SQSClient({});
//   const job = await enqueue(sqs, queueUrl, { kind: "email.send", args: { to: "ada@example.com" } });
//   console.log(job.id, job.messageId);
//
// On a FIFO queue (its URL ends in ".fifo") give groupId; the deduplication id defaults to the job
// id, as the Go client does. Delays up to 15 minutes use SQS's DelaySeconds (Standard queues);
// longer delays need the Go client's EventBridge Scheduler path.

import { randomBytes } from "node:crypto";
import {
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from "@aws-sdk/client-sqs";

export const ENVELOPE_VERSION = 1;
export const MAX_BODY_BYTES = 1024 * 1024; // SQS's message size limit: 1 MiB
export const MAX_SQS_DELAY_SECONDS = 900;
export const MAX_BATCH_ENTRIES = 10;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A job to send. */
export interface JobInput {
  kind: string;
  args: unknown;
  /** The job id; a new ULID when absent. */
  id?: string;
  /** The idempotency key, when it is not the id. */
  key?: string;
  /** The FIFO message group (required on FIFO queues; a fair-queue tenant on Standard ones). */
  groupId?: string;
  /** The FIFO deduplication id; the job id when absent. */
  dedupId?: string;
  /** SQS DelaySeconds, 0-900 (Standard queues). */
  delaySeconds?: number;
  /** A W3C traceparent to carry to the worker. */
  trace?: string;
}

/** A sent job. */
export interface SentJob {
  id: string;
  kind: string;
  messageId: string;
}

/** The envelope of docs/envelope.schema.json. */
export interface Envelope {
  v: number;
  id: string;
  kind: string;
  args: unknown;
  enqueued_at: string;
  key?: string;
  trace?: string;
}

/** A job that cannot be enqueued as given; thrown before any AWS call. */
export class InvalidJobError extends Error {
  override name = "InvalidJobError";
}

/** SQS refused a job of a batch. */
export class SendError extends Error {
  override name = "SendError";
  constructor(
    readonly job: { id: string; kind: string },
    readonly code: string,
    message: string,
  ) {
    super(`jobkit: send ${job.kind} ${job.id}: ${code}: ${message}`);
  }
}

/**
 * A new ULID: 48 bits of milliseconds then 80 random bits, 26 Crockford base32 characters, the
 * same form as the Go client's job ids (time-ordered, unique without coordination).
 */
export function newId(now: number = Date.now()): string {
  let n = (BigInt(now) << 80n) | BigInt("0x" + randomBytes(10).toString("hex"));
  let out = "";
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}

// A FIFO group or deduplication id: 1-128 printable ASCII characters, no space.
function messageIdOk(s: string): boolean {
  return s.length > 0 && s.length <= 128 && /^[!-~]+$/.test(s);
}

/** Checks a job and returns its id and the SQS entry (without Id) that sends it. */
export function prepare(queueUrl: string, job: JobInput, now: Date = new Date()): { id: string; entry: Omit<SendMessageBatchRequestEntry, "Id"> } {
  const fail = (msg: string): never => {
    throw new InvalidJobError(`jobkit: ${job.kind}: ${msg}`);
  };
  if (!queueUrl) throw new InvalidJobError("jobkit: empty queue URL");
  if (typeof job.kind !== "string" || job.kind === "") throw new InvalidJobError("jobkit: empty job kind");
  if (job.id !== undefined && (typeof job.id !== "string" || job.id === "")) fail("an id, when given, is a non-empty string");
  if (job.key !== undefined && (typeof job.key !== "string" || job.key === "")) fail("a key, when given, is a non-empty string");
  if (job.trace !== undefined && !TRACEPARENT.test(job.trace)) fail(`trace ${JSON.stringify(job.trace)} is not a W3C traceparent`);
  const fifo = queueUrl.endsWith(".fifo");
  const delay = job.delaySeconds ?? 0;
  if (!Number.isInteger(delay) || delay < 0 || delay > MAX_SQS_DELAY_SECONDS) fail(`delaySeconds must be 0-${MAX_SQS_DELAY_SECONDS}`);
  if (fifo && delay > 0) fail("a FIFO queue takes no per-message delay");
  if (fifo && !job.groupId) fail("a FIFO queue needs groupId");
  if (!fifo && job.dedupId) fail("dedupId is for FIFO queues");
  if (job.groupId !== undefined && !messageIdOk(job.groupId)) fail("groupId must be 1-128 printable ASCII characters");
  if (job.args === undefined) fail("args are required (use {} for none)");
  const id = job.id ?? newId(now.getTime());
  const env: Envelope = { v: ENVELOPE_VERSION, id, kind: job.kind, args: job.args, enqueued_at: now.toISOString() };
  if (job.key) env.key = job.key;
  if (job.trace) env.trace = job.trace;
  let body: string;
  try {
    body = JSON.stringify(env);
  } catch (e) {
    return fail(`args do not encode as JSON: ${(e as Error).message}`);
  }
  const size = Buffer.byteLength(body, "utf8");
  if (size > MAX_BODY_BYTES) fail(`body of ${size} bytes, SQS takes ${MAX_BODY_BYTES}`);
  const entry: Omit<SendMessageBatchRequestEntry, "Id"> = { MessageBody: body };
  if (delay > 0) entry.DelaySeconds = delay;
  if (job.groupId) entry.MessageGroupId = job.groupId;
  if (fifo) {
    const dedup = job.dedupId ?? id;
    if (!messageIdOk(dedup)) fail(`deduplication id ${JSON.stringify(dedup)} must be 1-128 printable ASCII characters`);
    entry.MessageDeduplicationId = dedup;
  }
  return { id, entry };
}

/** Sends one job. Throws InvalidJobError before any call for bad input. */
export async function enqueue(sqs: SQSClient, queueUrl: string, job: JobInput): Promise<SentJob> {
  const { id, entry } = prepare(queueUrl, job);
  const out = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, ...entry }));
  return { id, kind: job.kind, messageId: out.MessageId ?? "" };
}

/**
 * Sends jobs, 10 a call. Every job is checked before the first call (InvalidJobError); a job SQS
 * refuses throws SendError after the rest of its call was sent.
 */
export async function enqueueBatch(sqs: SQSClient, queueUrl: string, jobs: JobInput[]): Promise<SentJob[]> {
  const now = new Date();
  const prepared = jobs.map((j) => prepare(queueUrl, j, now));
  const sent: SentJob[] = [];
  for (let start = 0; start < prepared.length; start += MAX_BATCH_ENTRIES) {
    const chunk = prepared.slice(start, start + MAX_BATCH_ENTRIES);
    const out = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk.map((p, n) => ({ Id: String(n), ...p.entry })) }),
    );
    const failed = out.Failed?.[0];
    if (failed) {
      const p = chunk[Number(failed.Id)]!;
      throw new SendError({ id: p.id, kind: jobs[start + Number(failed.Id)]!.kind }, failed.Code ?? "", failed.Message ?? "");
    }
    for (const ok of out.Successful ?? []) {
      const n = Number(ok.Id);
      sent.push({ id: chunk[n]!.id, kind: jobs[start + n]!.kind, messageId: ok.MessageId ?? "" });
    }
  }
  return sent;
}
