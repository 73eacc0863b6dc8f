"""Loopback for a driver whose executors can only be on this machine: the one place that
decides it, for every master.

Spark picks the address its driver binds and advertises from the machine's host name, and
when that resolves to loopback it takes the first other interface instead ("using ... instead
(on interface eth0)"): a local job would then listen on the machine's network for its RPC
and block manager, which nothing off the machine may use. So two drivers bind and advertise
``127.0.0.1`` (``spark.driver.host``, ``spark.driver.bindAddress`` and ``SPARK_LOCAL_IP``):
the driver of a local master (its executors in its own JVM) and the client-mode driver of a
standalone master on loopback (whose workers can only be on this machine). An address named
by the user's configuration or environment wins.

A YARN job on a ResourceManager of this machine (its address in the client's yarn-site.xml
a loopback one, :func:`flinkish_cli.spark.yarn.is_loopback`) keeps to loopback the same way:
the driver advertises 127.0.0.1, and the ApplicationMaster's and executors' containers get
``SPARK_LOCAL_IP`` (the driver of ``yarn-application`` runs in the ApplicationMaster). Any
other driver (a standalone master on a network address, YARN elsewhere, Kubernetes) keeps
Spark's choice: executors on other machines connect to it.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

#: the address a local master's driver binds and advertises
LOOPBACK = "127.0.0.1"
#: Spark's environment variable for the address of every Spark process of the machine
LOCAL_IP_ENV = "SPARK_LOCAL_IP"
#: the driver's settings of a local master
DRIVER_SETTINGS = {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}
#: the settings of a YARN job on a ResourceManager of this machine: its containers' address
YARN_SETTINGS = {
    "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": LOOPBACK,
    "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK,
    "spark.driver.host": LOOPBACK,
}


#: the host names of a standalone master on loopback
_LOOPBACK_HOSTS = frozenset({LOOPBACK, "localhost"})


def is_local_master(master: str) -> bool:
    """True for ``local``, ``local[N]`` and ``local[N,F]``: executors in the driver's JVM."""
    return master == "local" or master.startswith("local[")


def on_loopback(master: str) -> bool:
    """True when every executor of ``master`` is on this machine, reached over loopback: a
    local master, ``spark://`` masters whose hosts are all loopback, or ``yarn`` with the
    client's ResourceManager on loopback."""
    if is_local_master(master):
        return True
    if master == "yarn":
        from flinkish_cli.spark import yarn

        return yarn.is_loopback()
    if not master.startswith("spark://"):
        return False
    hosts = [part.rpartition(":")[0] for part in master[len("spark://") :].split(",")]
    return all(host in _LOOPBACK_HOSTS for host in hosts)


def apply(
    master: str,
    properties: MutableMapping[str, str],
    env: MutableMapping[str, str],
    environ: Mapping[str, str],
) -> None:
    """Put loopback into the ``properties`` and ``env`` (the driver's environment on top of
    ``environ``) of a driver :func:`on_loopback`, keeping any address the user gave."""
    if not on_loopback(master):
        return
    settings = YARN_SETTINGS if master == "yarn" else DRIVER_SETTINGS
    for key, value in settings.items():
        properties.setdefault(key, value)
    if LOCAL_IP_ENV not in environ:
        env.setdefault(LOCAL_IP_ENV, LOOPBACK)
