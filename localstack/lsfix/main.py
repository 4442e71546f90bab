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


_patch_sqs_update_worker()

if __name__ == "__main__":
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)
