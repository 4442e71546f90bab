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

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402  (sets the region, defines the Lambda context and the pass loop)
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
    bench.serve("invocation.py", lambda: run(payloads, context), records, wall=False)


if __name__ == "__main__":
    main()
