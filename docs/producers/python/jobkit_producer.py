"""Enqueue jobkit jobs from Python with boto3.

A job is an SQS message whose body is the envelope of docs/envelope.schema.json; the Go workers
run it exactly as if the Go client had sent it. This module writes that envelope, checks what it
is given before any AWS call (InvalidJobError), and sends one job or a batch of them:

    import boto3
    from jobkit_producer import enqueue

    sqs = boto3.client("sqs")
    job = enqueue(sqs, queue_url, "email.send", {"to": "ada@example.com", "subject": "Welcome"})
    print(job.id, job.message_id)

On a FIFO queue (its URL ends in ".fifo") give group_id; the deduplication id defaults to the job
id, as the Go client does. Delays up to 15 minutes use SQS's DelaySeconds (Standard queues);
longer delays need the Go client's EventBridge Scheduler path.

Run as a command it sends one job and prints {"id": ..., "message_id": ...}:

    python jobkit_producer.py --queue-url URL --kind email.send --args '{"to": "ada@example.com"}'
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import secrets
import sys
import time
from typing import Any, Iterable, Optional

ENVELOPE_VERSION = 1
MAX_BODY_BYTES = 1024 * 1024  # SQS's message size limit: 1 MiB
MAX_SQS_DELAY_SECONDS = 900
MAX_BATCH_ENTRIES = 10

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_TRACEPARENT = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


class InvalidJobError(ValueError):
    """A job that cannot be enqueued as given; raised before any AWS call."""


class SendError(RuntimeError):
    """SQS refused a job of a batch; ``job`` names it."""

    def __init__(self, job: "Job", code: str, message: str):
        super().__init__(f"jobkit: send {job.kind} {job.id}: {code}: {message}")
        self.job, self.code = job, code


@dataclasses.dataclass
class Job:
    """One job to send (enqueue_batch takes these) and, once sent, its SQS message id."""

    kind: str
    args: Any
    id: Optional[str] = None
    key: Optional[str] = None
    group_id: Optional[str] = None
    dedup_id: Optional[str] = None
    delay_seconds: int = 0
    trace: Optional[str] = None
    message_id: Optional[str] = None


def new_id() -> str:
    """A new ULID: 48 bits of milliseconds then 80 random bits, 26 Crockford base32 characters,
    the same form as the Go client's job ids (time-ordered, unique without coordination)."""
    n = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(n >> (5 * i)) & 31] for i in reversed(range(26)))


def _message_id_ok(s: str) -> bool:
    # A FIFO group or deduplication id: 1-128 printable ASCII characters, no space.
    return 0 < len(s) <= 128 and all("!" <= c <= "~" for c in s)


def _prepare(queue_url: str, job: Job, now: datetime.datetime) -> dict:
    """Checks job, fills its id, and returns the SQS entry that sends it."""
    if not queue_url:
        raise InvalidJobError("jobkit: empty queue URL")
    if not isinstance(job.kind, str) or not job.kind:
        raise InvalidJobError("jobkit: empty job kind")
    if job.id is not None and (not isinstance(job.id, str) or not job.id):
        raise InvalidJobError(f"jobkit: {job.kind}: an id, when given, is a non-empty string")
    if job.key is not None and (not isinstance(job.key, str) or not job.key):
        raise InvalidJobError(f"jobkit: {job.kind}: a key, when given, is a non-empty string")
    if job.trace is not None and not _TRACEPARENT.match(job.trace):
        raise InvalidJobError(f"jobkit: {job.kind}: trace {job.trace!r} is not a W3C traceparent")
    fifo = queue_url.endswith(".fifo")
    if not isinstance(job.delay_seconds, int) or not 0 <= job.delay_seconds <= MAX_SQS_DELAY_SECONDS:
        raise InvalidJobError(f"jobkit: {job.kind}: delay_seconds must be 0-{MAX_SQS_DELAY_SECONDS}")
    if fifo and job.delay_seconds:
        raise InvalidJobError(f"jobkit: {job.kind}: a FIFO queue takes no per-message delay")
    if fifo and not job.group_id:
        raise InvalidJobError(f"jobkit: {job.kind}: a FIFO queue needs group_id")
    if not fifo and job.dedup_id:
        raise InvalidJobError(f"jobkit: {job.kind}: dedup_id is for FIFO queues")
    if job.id is None:
        job.id = new_id()
    envelope = {
        "v": ENVELOPE_VERSION,
        "id": job.id,
        "kind": job.kind,
        "args": job.args,
        "enqueued_at": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
    }
    if job.key:
        envelope["key"] = job.key
    if job.trace:
        envelope["trace"] = job.trace
    try:
        body = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidJobError(f"jobkit: {job.kind}: args do not encode as JSON: {e}") from e
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise InvalidJobError(f"jobkit: {job.kind}: body of {len(body.encode())} bytes, SQS takes {MAX_BODY_BYTES}")
    entry: dict = {"MessageBody": body}
    if job.delay_seconds:
        entry["DelaySeconds"] = job.delay_seconds
    if job.group_id:
        entry["MessageGroupId"] = job.group_id  # on a Standard queue: a fair-queue tenant
        if not _message_id_ok(job.group_id):
            raise InvalidJobError(f"jobkit: {job.kind}: group_id must be 1-128 printable ASCII characters")
    if fifo:
        dedup = job.dedup_id or job.id
        if not _message_id_ok(dedup):
            raise InvalidJobError(f"jobkit: {job.kind}: deduplication id {dedup!r} must be 1-128 printable ASCII characters")
        entry["MessageDeduplicationId"] = dedup
    return entry


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def enqueue(sqs, queue_url: str, kind: str, args: Any, **opts) -> Job:
    """Sends one job (opts: id, key, group_id, dedup_id, delay_seconds, trace) and returns it
    with its id and message_id. Raises InvalidJobError before any call for bad input."""
    job = Job(kind=kind, args=args, **opts)
    entry = _prepare(queue_url, job, _now())
    out = sqs.send_message(QueueUrl=queue_url, **entry)
    job.message_id = out["MessageId"]
    return job


def enqueue_batch(sqs, queue_url: str, jobs: Iterable[Job]) -> list[Job]:
    """Sends jobs, 10 a call. Every job is checked before the first call (InvalidJobError);
    a job SQS refuses raises SendError after the rest of its call was sent."""
    jobs = list(jobs)
    now = _now()
    entries = [_prepare(queue_url, j, now) for j in jobs]
    for start in range(0, len(jobs), MAX_BATCH_ENTRIES):
        chunk = {str(n): e for n, e in enumerate(entries[start : start + MAX_BATCH_ENTRIES])}
        out = sqs.send_message_batch(QueueUrl=queue_url, Entries=[{"Id": k, **e} for k, e in chunk.items()])
        for ok in out.get("Successful", []):
            jobs[start + int(ok["Id"])].message_id = ok["MessageId"]
        for failed in out.get("Failed", []):
            raise SendError(jobs[start + int(failed["Id"])], failed.get("Code", ""), failed.get("Message", ""))
    return jobs


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description="Send one jobkit job to an SQS queue.")
    p.add_argument("--queue-url", required=True)
    p.add_argument("--kind", required=True)
    p.add_argument("--args", required=True, help="the job's args as JSON")
    p.add_argument("--id")
    p.add_argument("--key")
    p.add_argument("--group-id")
    p.add_argument("--dedup-id")
    p.add_argument("--delay-seconds", type=int, default=0)
    p.add_argument("--trace")
    a = p.parse_args(argv)
    try:
        args = json.loads(a.args)
    except ValueError as e:
        print(f"jobkit: --args is not JSON: {e}", file=sys.stderr)
        return 2
    import boto3  # only the command needs it; the module takes any client

    try:
        job = enqueue(boto3.client("sqs"), a.queue_url, a.kind, args, id=a.id, key=a.key,
                      group_id=a.group_id, dedup_id=a.dedup_id, delay_seconds=a.delay_seconds, trace=a.trace)
    except InvalidJobError as e:
        print(e, file=sys.stderr)
        return 2
    print(json.dumps({"id": job.id, "message_id": job.message_id}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
