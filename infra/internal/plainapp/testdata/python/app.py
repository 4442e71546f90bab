"""The Python function of the plain CDK app: for each SQS record it writes "python:<body>" to a
file of OUT_DIR named by the message id, and reports the body "fail" as a batch item failure."""
import os


def handler(event, context):
    failed = []
    for r in event["Records"]:
        with open(os.path.join(os.environ["OUT_DIR"], r["messageId"]), "w") as f:
            f.write("python:" + r["body"])
        if r["body"] == "fail":
            failed.append({"itemIdentifier": r["messageId"]})
    return {"batchItemFailures": failed}
