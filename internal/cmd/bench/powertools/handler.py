"""The Powertools for AWS Lambda (Python) peer of a jobkit worker.

It reads the same SQS events a jobkit function reads: each record's body is a jobkit envelope
({"v":1,"id":...,"kind":...,"args":{...},"enqueued_at":...}). The idiomatic Powertools way to run
such a batch: BatchProcessor(EventType.SQS) with process_partial_response, a record handler that
parses the body into a pydantic model with Powertools' parser, and idempotency on a DynamoDB table.

- `handler` runs every record through `record_handler`: parse the envelope, call a no-op. It is the
  peer of jobs.NewLambdaHandler(…).HandleSQS with a no-op worker (the throughput benchmark, bench.py).
- `idempotent_handler` runs every record through the same steps inside Powertools idempotency
  (DynamoDB persistence, keyed on the envelope id): the peer of a jobkit function with the
  idempotency middleware (functions/email). The cold start benchmark starts this one.

Everything a real function does before its first event happens at import time, as on Lambda:
the imports, the models, the batch processor and the DynamoDB persistence layer (a boto3 client).
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Optional

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.parser import BaseModel, parse


class SampleArgs(BaseModel):
    """The args of a bench.sample job (jobstest.SampleArgs in Go)."""

    user_id: int
    email: str
    template: str
    amount: float


class JobEnvelope(BaseModel):
    """A jobkit envelope (jobs.Envelope in Go) with typed args."""

    v: int
    id: str
    kind: str
    args: SampleArgs
    enqueued_at: datetime
    key: Optional[str] = None
    trace: Optional[str] = None


def work(args: SampleArgs) -> None:
    """The job itself: nothing, as the Go side's no-op worker."""


processor = BatchProcessor(event_type=EventType.SQS)


def record_handler(record: SQSRecord) -> None:
    job = parse(event=record.body, model=JobEnvelope)
    work(job.args)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda handler: a batch of SQS records, partial failures reported."""
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )


persistence = DynamoDBPersistenceLayer(
    table_name=os.environ.get("IDEMPOTENCY_TABLE", "jobkit-bench-idempotency")
)
idempotency_config = IdempotencyConfig(event_key_jmespath="id")


@idempotent_function(
    data_keyword_argument="envelope", persistence_store=persistence, config=idempotency_config
)
def run_once(envelope: dict[str, Any]) -> None:
    job = JobEnvelope.model_validate(envelope)
    work(job.args)


def idempotent_record_handler(record: SQSRecord) -> None:
    job = parse(event=record.body, model=JobEnvelope)
    run_once(envelope=job.model_dump(mode="json"))


def idempotent_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Lambda handler: a batch of SQS records, each job at most once per envelope id."""
    idempotency_config.register_lambda_context(context)
    if not event.get("Records"):
        return {"batchItemFailures": []}
    return process_partial_response(
        event=event,
        record_handler=idempotent_record_handler,
        processor=processor,
        context=context,
    )
