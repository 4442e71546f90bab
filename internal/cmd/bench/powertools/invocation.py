"""Serve whole-invocation timings of handler.handler, for the jobkit benchmark's alternating pairs.

    python invocation.py PAYLOADS.jsonl

PAYLOADS.jsonl holds one Lambda SQS event payload per line, the bytes Lambda hands a function.
Each timed pass does what Lambda's Python runtime does with every payload: json.loads it, call
the handler (BatchProcessor + parser), json.dumps the response. After one untimed warm-up pass it
prints "ready"; then for each line "run" on stdin it runs one pass (after a garbage collection)
and prints its process CPU time per message in ns, so the Go side can interleave its own passes with
these. A pass fails the process if any record is reported failed.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402  (sets the region, defines the Lambda context)
import handler  # noqa: E402


def run(payloads: list[bytes], context: bench.Context) -> int:
    failed = 0
    for payload in payloads:
        resp = handler.handler(json.loads(payload), context)
        failed += len(resp["batchItemFailures"])
        json.dumps(resp)
    return failed


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        payloads = [line.rstrip(b"\n") for line in f if line.strip()]
    records = sum(len(json.loads(p)["Records"]) for p in payloads)
    context = bench.Context()
    if (failed := run(payloads, context)) != 0:
        sys.exit(f"invocation.py: {failed} of {records} records failed")
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        gc.collect()
        start = time.process_time_ns()
        failed = run(payloads, context)
        elapsed = time.process_time_ns() - start
        if failed != 0:
            sys.exit(f"invocation.py: {failed} of {records} records failed")
        print(elapsed / records, flush=True)


if __name__ == "__main__":
    main()
