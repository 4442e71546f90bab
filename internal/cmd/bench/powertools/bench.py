"""Time handler.handler on a file of SQS events, as the jobkit benchmark times jobs.NewLambdaHandler(…).HandleSQS.

    python bench.py EVENTS.json

EVENTS.json is a JSON list of Lambda SQS events (the bench command writes it: 1,000 batches of 10
jobkit envelopes). The events are decoded once, before timing, as the Lambda runtime hands the
handler a decoded event. One untimed pass warms up (pydantic's validators, the parser's model
cache) and "ready" is printed; then for each line "run" on stdin one pass calls the handler on
every event, after a garbage collection, and prints "<wall ns per message> <CPU ns per message>"
(perf_counter_ns and process_time_ns). The Go side asks for passes between its own, so the two
alternate. A pass fails the run if any record is reported failed.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from typing import Callable

os.environ.setdefault("AWS_REGION", "us-east-1")  # the persistence layer makes a boto3 client
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import handler  # noqa: E402


class Context:
    """The attributes of a Lambda context object the batch utility may read."""

    function_name = "powertools-bench"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:powertools-bench"
    memory_limit_in_mb = 128
    aws_request_id = "00000000-0000-4000-8000-000000000000"
    log_group_name = "/aws/lambda/powertools-bench"
    log_stream_name = "bench"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 900_000


def run(events: list[dict], context: Context) -> int:
    failed = 0
    for event in events:
        failed += len(handler.handler(event, context)["batchItemFailures"])
    return failed


def serve(name: str, work: Callable[[], int], records: int, wall: bool = True) -> None:
    """Runs work (which returns its failed records) once as a check, prints "ready", then runs it
    once per "run" line on stdin and prints its cost per record in nanoseconds: wall time and CPU
    time, or CPU time alone when wall is false."""
    if (failed := work()) != 0:
        sys.exit(f"{name}: {failed} of {records} records failed")
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        gc.collect()
        cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
        failed = work()
        elapsed = time.perf_counter_ns() - start
        cpu = time.process_time_ns() - cpu_start
        if failed != 0:
            sys.exit(f"{name}: {failed} of {records} records failed")
        if wall:
            print(elapsed / records, cpu / records, flush=True)
        else:
            print(cpu / records, flush=True)


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        events = json.load(f)
    records = sum(len(e["Records"]) for e in events)
    context = Context()
    serve("bench.py", lambda: run(events, context), records)


if __name__ == "__main__":
    main()
