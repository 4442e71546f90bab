"""A minimal Lambda runtime for Python: the Runtime API loop, as awslambdaric runs it.

It imports the handler named by _HANDLER ("module.function") from LAMBDA_TASK_ROOT, reports an
import failure to init/error, then loops: invocation/next, call the handler, post the result to
invocation/{id}/response (or the exception to invocation/{id}/error). The cold start benchmark
starts it as a function's bootstrap; everything here counts in the cold start, this module's own
imports included.

Runtime API reference: https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html
"""

import importlib
import json
import os
import sys
import traceback
import urllib.request

API = "http://" + os.environ["AWS_LAMBDA_RUNTIME_API"] + "/2018-06-01/runtime"


class Context:
    """The Lambda context object a handler receives."""

    def __init__(self, headers):
        self.aws_request_id = headers.get("Lambda-Runtime-Aws-Request-Id", "")
        self.invoked_function_arn = headers.get("Lambda-Runtime-Invoked-Function-Arn", "")
        self._deadline_ms = int(headers.get("Lambda-Runtime-Deadline-Ms", "0"))
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"))
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")

    def get_remaining_time_in_millis(self):
        import time

        return max(0, self._deadline_ms - int(time.time() * 1000))


def post(path, payload):
    req = urllib.request.Request(API + path, data=json.dumps(payload).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req) as resp:
        resp.read()


def error_payload(exc):
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def main():
    sys.path.insert(0, os.environ.get("LAMBDA_TASK_ROOT", os.getcwd()))
    module_name, _, func_name = os.environ["_HANDLER"].rpartition(".")
    try:
        fn = getattr(importlib.import_module(module_name), func_name)
    except Exception as exc:  # reported to Lambda, as awslambdaric does
        post("/init/error", error_payload(exc))
        sys.exit(1)
    while True:
        with urllib.request.urlopen(API + "/invocation/next") as resp:
            headers = resp.headers
            event = json.loads(resp.read())
        ctx = Context(headers)
        try:
            result = fn(event, ctx)
        except Exception as exc:
            post("/invocation/" + ctx.aws_request_id + "/error", error_payload(exc))
            continue
        post("/invocation/" + ctx.aws_request_id + "/response", result)


if __name__ == "__main__":
    main()
