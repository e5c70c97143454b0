"""`tiny-harness up` and the TUI's local cluster: tool servers and agents on the developer's own
machine may be reached, unless the settings say where the operator may connect."""

from __future__ import annotations

from tiny_harness.cli.main import _local_destinations
from tiny_harness.core.destinations import LOCAL_DEVELOPMENT, DestinationSettings
from tiny_harness.core.settings import Settings


def test_the_local_cluster_may_reach_loopback_unless_the_settings_say_otherwise() -> None:
    said: list[str] = []

    local = _local_destinations(Settings.parse({"operator": {"shards": 2}}), said.append)
    chosen = _local_destinations(
        Settings.parse({"operator": {"destinations": {"allowed_hosts": ["tools.lan"]}}}),
        said.append,
    )

    assert local.operator.destinations == LOCAL_DEVELOPMENT
    assert local.operator.shards == 2
    assert chosen.operator.destinations == DestinationSettings(allowed_hosts=("tools.lan",))
    assert said == [
        "Tool servers and agents on this machine may be reached: [operator.destinations] "
        "allowed_cidrs = ['127.0.0.0/8', '::1/128'] (set [operator.destinations] to change it)."
    ]
    assert Settings().operator.destinations.refuse_address("127.0.0.1") is not None
