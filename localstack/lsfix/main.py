"""LocalStack's runtime (localstack-core, host mode) bound to the loopback address only.

LocalStack's default gateway (Twisted) listens on every interface whatever GATEWAY_LISTEN names
(it passes only the port to TCP4ServerEndpoint). A local emulator holds test state and runs jobs,
so this launcher binds it to the host GATEWAY_LISTEN names (127.0.0.1 by default) and then runs
LocalStack's own entry point unchanged.
"""

import os
import runpy

from twisted.internet import endpoints

_tcp4 = endpoints.TCP4ServerEndpoint
_host = os.environ.get("GATEWAY_LISTEN", "127.0.0.1").rsplit(":", 1)[0] or "127.0.0.1"


def _loopback_tcp4(reactor, port, backlog=50, interface=""):
    return _tcp4(reactor, port, backlog, interface or _host)


endpoints.TCP4ServerEndpoint = _loopback_tcp4

if __name__ == "__main__":
    runpy.run_module("localstack.runtime.main", run_name="__main__", alter_sys=True)
