"""The destination policy as pure functions: which addresses and names are refused, what lifts
a refusal, and what a refusal tells the person who has to change the settings."""

from __future__ import annotations

import ipaddress

import pytest

from tiny_harness.core.destinations import (
    LOCAL_DEVELOPMENT,
    METADATA_ADDRESSES,
    DestinationSettings,
    plain,
)
from tiny_harness.core.errors import ConfigError
from tiny_harness.core.settings import Settings

DEFAULT = DestinationSettings()


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "loopback"),
        ("::", "loopback"),
        ("169.254.169.254", "metadata"),
        ("169.254.170.2", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("168.63.129.16", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "metadata"),
        ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
    ],
)
def test_the_defaults_refuse_loopback_link_local_and_metadata_addresses(
    address: str, rule: str
) -> None:
    refusal = DEFAULT.refuse_address(address)

    assert refusal is not None
    assert refusal.rule == rule


@pytest.mark.parametrize(
    "address", ["10.0.0.7", "172.16.3.4", "192.168.1.1", "203.0.113.9", "2001:db8::1", "fd00::1"]
)
def test_every_other_address_is_allowed(address: str) -> None:
    assert DEFAULT.refuse_address(address) is None


def test_a_listed_range_lifts_loopback_and_link_local() -> None:
    assert LOCAL_DEVELOPMENT.refuse_address("127.0.0.1") is None
    assert LOCAL_DEVELOPMENT.refuse_address("::1") is None
    assert LOCAL_DEVELOPMENT.refuse_address("::ffff:127.0.0.1") is None
    assert LOCAL_DEVELOPMENT.refuse_address("169.254.1.1") is not None
    node = DestinationSettings(allowed_cidrs=("169.254.0.0/16",))
    assert node.refuse_address("169.254.1.1") is None


def test_a_metadata_address_is_lifted_only_by_listing_it_alone() -> None:
    wide = DestinationSettings(allowed_cidrs=("169.254.0.0/16", "0.0.0.0/0", "::/0"))
    for network in METADATA_ADDRESSES:
        assert wide.refuse_address(network.network_address) is not None
    alone = DestinationSettings(allowed_cidrs=("169.254.169.254/32",))
    assert alone.refuse_address("169.254.169.254") is None
    assert alone.refuse_address("169.254.170.2") is not None


def test_a_metadata_name_is_refused_before_any_lookup_unless_listed() -> None:
    refusal = DEFAULT.refuse_name("Metadata.Google.Internal.")

    assert refusal is not None
    assert refusal.rule == "metadata"
    assert refusal.setting == "[operator.destinations] allowed_hosts"
    assert DEFAULT.refuse_name("search.example.com") is None
    listed = DestinationSettings(allowed_hosts=("metadata.google.internal",))
    assert listed.refuse_name("metadata.google.internal") is None
    assert listed.trusts("METADATA.google.internal")
    assert not DEFAULT.trusts("search.example.com")


def test_a_refusal_names_the_address_the_rule_and_the_setting_to_change() -> None:
    refusal = DEFAULT.refuse_address("169.254.169.254", "imds.example.com")

    assert refusal is not None
    assert refusal.message == (
        "the operator refuses to connect to 169.254.169.254 (imds.example.com): it is a cloud "
        'metadata address (destination rule "metadata"); nothing was sent. If the operator '
        "should reach it, add 169.254.169.254/32 to [operator.destinations] allowed_cidrs (the "
        "chart's operator.destinations.allowedCidrs)"
    )
    v6 = DEFAULT.refuse_address("::1")
    assert v6 is not None
    assert "add ::1/128 to" in v6.message


def test_mapped_addresses_are_read_as_the_ipv4_address_they_reach() -> None:
    assert plain(ipaddress.ip_address("::ffff:10.1.2.3")) == ipaddress.ip_address("10.1.2.3")
    assert plain(ipaddress.ip_address("64:ff9b::7f00:1")) == ipaddress.ip_address("127.0.0.1")
    assert plain(ipaddress.ip_address("2001:db8::1")) == ipaddress.ip_address("2001:db8::1")


def test_the_settings_refuse_what_is_not_a_range_or_a_name_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"operator\.destinations\.allowed_cidrs: .*host bits"):
        Settings.parse({"operator": {"destinations": {"allowed_cidrs": ["10.0.0.1/8"]}}})
    with pytest.raises(ConfigError, match=r"operator\.destinations\.allowed_hosts: .*not a host"):
        Settings.parse({"operator": {"destinations": {"allowed_hosts": ["https://x.example"]}}})
    with pytest.raises(ConfigError, match=r"operator\.destinations\.allow"):
        Settings.parse({"operator": {"destinations": {"allow": []}}})
    parsed = Settings.parse(
        {"operator": {"destinations": {"allowed_cidrs": ["127.0.0.0/8"], "allowed_hosts": ["A."]}}}
    )
    assert parsed.operator.destinations.allowed_hosts == ("a",)
    assert Settings().operator.destinations == DEFAULT
