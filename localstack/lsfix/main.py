"""LocalStack's runtime (localstack-core, host mode) bound to the loopback address only, with one
fix to its SQS provider.

LocalStack's default gateway (Twisted) listens on every interface whatever GATEWAY_LISTEN names
(it passes only the port to TCP4ServerEndpoint). A local emulator holds test state and runs jobs,
so this launcher binds it to the host GATEWAY_LISTEN names (127.0.0.1 by default) and then runs
LocalStack's own entry point.

SQS: LocalStack hands back messages whose visibility timeout ran out (and enqueues delayed ones)
from one background pass a second over every queue. The pass iterates the live dict of queues;
a queue created or deleted meanwhile raises "dictionary changed size during iteration", which
LocalStack's scheduler swallows, so the queues after that point (the newest) are skipped. Under
queue churn a message can stay invisible long after its timeout. The pass here iterates a copy.

SQS metrics: LocalStack publishes each queue's ApproximateNumberOfMessages{Visible,NotVisible,
Delayed} to CloudWatch (every SQS_CLOUDWATCH_METRICS_REPORT_INTERVAL seconds; localstack.sh sets
10) but not ApproximateAgeOfOldestMessage, which SQS publishes too and which the oldest-age
readers (jobkit queues, the console, the AgeAlarm's metric) take from CloudWatch. The pass here
adds it for every queue that holds messages: the age of the oldest message visible or in flight,
in whole seconds.
"""

import os
import runpy

from twisted.internet import endpoints

_tcp4 = endpoints.TCP4ServerEndpoint
_host = os.environ.get("GATEWAY_LISTEN", "127.0.0.1").rsplit(":", 1)[0] or "127.0.0.1"


def _loopback_tcp4(reactor, port, backlog=50, interface=""):
    return _tcp4(reactor, port, backlog, interface or _host)


endpoints.TCP4ServerEndpoint = _loopback_tcp4


def _patch_sqs_update_worker():
    from localstack.services.sqs import provider, models

    def iter_queues(self):
        for _account, _region, store in list(models.sqs_stores.iter_stores()):
            yield from list(store.queues.values())

    provider.QueueUpdateWorker.iter_queues = iter_queues


def _patch_sqs_age_metric():
    import time

    from localstack.services.sqs import provider
    from localstack.services.sqs.models import sqs_stores
    from localstack.utils.cloudwatch.cloudwatch_util import SqsMetricBatchData, publish_sqs_metric_batch

    publish_counts = provider.CloudwatchPublishWorker.publish_approximate_cloudwatch_metrics

    def oldest_sent(queue):
        msgs = list(getattr(getattr(queue, "visible", None), "queue", []))
        for group in list(getattr(queue, "message_groups", {}).values()):
            msgs.extend(list(group.messages))
        msgs.extend(list(queue.inflight))
        sent = [int(m.message["Attributes"]["SentTimestamp"]) for m in msgs
                if not getattr(m, "deleted", False) and "SentTimestamp" in m.message.get("Attributes", {})]
        return min(sent) if sent else None

    def publish_with_age(self):
        publish_counts(self)
        try:
            publish_ages()
        except Exception:  # a store created or a queue changed during the pass: the next has it
            pass

    def publish_ages():
        now = int(time.time() * 1000)
        for account_id, region, store in list(sqs_stores.iter_stores()):
            data = []
            for queue in list(store.queues.values()):
                oldest = oldest_sent(queue)
                if oldest is not None:
                    data.append(SqsMetricBatchData(QueueName=queue.name, MetricName="ApproximateAgeOfOldestMessage", Unit="Seconds",
                                                   Value=max(0, now - oldest) // 1000))
            if data:
                publish_sqs_metric_batch(account_id=account_id, region=region, sqs_metric_batch_data=data)

    provider.CloudwatchPublishWorker.publish_approximate_cloudwatch_metrics = publish_with_age


_patch_sqs_update_worker()
_patch_sqs_age_metric()

if __name__ == "__main__":
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)
