"""A Lambda runtime for Python functions run offline (package lambdaruntime): the Runtime API loop
(invocation/next, then the handler's response or error) around the handler _HANDLER names
("module.function", the module under LAMBDA_TASK_ROOT). Lambda's own Python runtime adds what the
machine's Python lacks (boto3 among them): a handler that imports it fails at init here."""
import importlib
import json
import os
import sys
import time
import traceback
import urllib.request

API = "http://%s/2018-06-01/runtime" % os.environ["AWS_LAMBDA_RUNTIME_API"]


def post(url, body):
    req = urllib.request.Request(url, data=body.encode(), method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()


def error_body(err):
    return json.dumps({
        "errorType": type(err).__name__,
        "errorMessage": str(err),
        "stackTrace": traceback.format_exception(type(err), err, err.__traceback__),
    })


class Context:
    def __init__(self, request_id, arn, deadline_ms):
        self.aws_request_id = request_id
        self.invoked_function_arn = arn
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self._deadline_ms = deadline_ms

    def get_remaining_time_in_millis(self):
        return int(self._deadline_ms - time.time() * 1000)


def load_handler():
    spec = os.environ.get("_HANDLER", "")
    module, _, name = spec.rpartition(".")
    if not module:
        raise ValueError("_HANDLER %r is not module.function" % spec)
    sys.path.insert(0, os.environ["LAMBDA_TASK_ROOT"])
    return getattr(importlib.import_module(module.replace("/", ".")), name)


def main():
    try:
        handler = load_handler()
    except Exception as err:  # noqa: BLE001 - reported to the Runtime API as Lambda does
        post(API + "/init/error", error_body(err))
        sys.exit(1)
    while True:
        with urllib.request.urlopen(API + "/invocation/next") as res:
            request_id = res.headers["Lambda-Runtime-Aws-Request-Id"]
            ctx = Context(request_id, res.headers.get("Lambda-Runtime-Invoked-Function-Arn"),
                          int(res.headers.get("Lambda-Runtime-Deadline-Ms", "0")))
            event = json.loads(res.read())
        try:
            body = json.dumps(handler(event, ctx))
        except Exception as err:  # noqa: BLE001 - the invocation's error (a result json cannot
            # encode too, Lambda's Runtime.MarshalError), as Lambda reports it
            post(API + "/invocation/%s/error" % request_id, error_body(err))
            continue
        post(API + "/invocation/%s/response" % request_id, body)


if __name__ == "__main__":
    main()
