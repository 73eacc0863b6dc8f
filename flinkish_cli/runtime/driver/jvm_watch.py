"""Whether Spark's JVM is still there for a classic driver.

``spark-submit`` starts Spark's JVM, which starts the Python driver: when that JVM dies
(killed, out of memory), the driver becomes an orphan and nothing in it can run the job any
more; it then exits for its supervisor to start a new one. In Spark's cluster mode the
driver's JVM (a YARN ApplicationMaster) starts the Python driver the same way: its orphan
exits without recording anything, as the cluster (YARN's next attempt) restarts the job. A
session cluster's server outlives its clients, so a Connect client never watches it.
"""

from __future__ import annotations

import os
import time

from flinkish_cli.runtime.flavours.flavour import Flavour

#: How long a driver that lost its gateway waits to see whether Spark's JVM has exited.
GATEWAY_LOSS_GRACE_S = 5.0


class JvmWatch:
    """Watches the JVM that started this driver (its parent process)."""

    def __init__(self, flavour: Flavour, deploy_mode: str) -> None:
        self.watching = flavour.driver_owns_jvm and deploy_mode in ("client", "cluster")
        self.parent = os.getppid()
        self._lost = False

    def lost(self, confirm: bool = False) -> bool:
        """The JVM has exited: this process is its orphan now.

        ``confirm``: the program just lost its connection to the gateway. A JVM killed with
        SIGKILL refuses connections before the kernel has finished its exit and re-parented
        this process, so wait a little for that before judging it alive (otherwise its
        death would count twice under the restart strategy: here and in the supervisor).
        """
        if not self.watching:
            return False
        deadline = time.monotonic() + (GATEWAY_LOSS_GRACE_S if confirm else 0.0)
        while not self._lost:
            if os.getppid() != self.parent:
                self._lost = True
            elif time.monotonic() >= deadline:
                break
            else:
                time.sleep(0.05)
        return self._lost


def lost_gateway(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is a lost connection to Spark's JVM."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionError) or type(seen).__name__ == "Py4JNetworkError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False
