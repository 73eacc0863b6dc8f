"""Which drivers watch the JVM that started them."""

from __future__ import annotations

from flinkish_cli.runtime.driver.jvm_watch import JvmWatch
from flinkish_cli.runtime.flavours import flavour


def test_a_classic_driver_watches_its_jvm_in_client_and_cluster_mode() -> None:
    classic = flavour.by_name("classic")
    assert JvmWatch(classic, "client").watching
    assert JvmWatch(classic, "cluster").watching  # a YARN ApplicationMaster's Python driver
    assert not JvmWatch(flavour.by_name("connect"), "session").watching


def test_a_live_parent_is_not_lost() -> None:
    assert not JvmWatch(flavour.by_name("classic"), "cluster").lost()
