"""The destination policy: the addresses the operator refuses to connect to when it calls a
tool server, a remote agent or an agent's card, unless the settings list them.

A tool server's URL and an agent's card URL are chosen by whoever may write those objects, and
a card names further URLs of its own. Left alone, any of them could aim the operator (and the
credentials it holds) at the machine it runs on (loopback), at the node's link-local services,
or at a cloud's metadata service, which hands out the node's credentials. So these are
refused unless ``[operator.destinations]`` lists them::

    [operator.destinations]
    allowed_cidrs = ["127.0.0.0/8", "::1/128"]   # what `tiny-harness up` allows on a laptop
    allowed_hosts = ["metadata.internal.example"]

The rules, in the order they are checked:

- ``metadata``: the cloud metadata addresses and names of :data:`METADATA_ADDRESSES` and
  :data:`METADATA_HOSTS`. Lifted only by listing that address alone (``169.254.169.254/32``)
  or that name: allowing a whole link-local range does not open the metadata service.
- ``link-local``: 169.254.0.0/16 and fe80::/10.
- ``loopback``: 127.0.0.0/8, ::1, and the unspecified 0.0.0.0/8 and :: (which reach the
  machine itself).

An address is checked as the operator is about to connect to it, after the name was resolved
(see ``tiny_harness.outbound``), so a name that resolves to a refused address is refused too,
and a later answer of the DNS cannot swap it. An IPv4 address written as IPv6 (``::ffff:a.b.c.d``
or NAT64's ``64:ff9b::a.b.c.d``) is checked as the IPv4 address it reaches. A name listed in
``allowed_hosts`` is trusted with whatever it resolves to. This module is the policy only: pure
functions over addresses, used by the one guard that connects.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The settings keys a refusal names, in the file and in the chart's values.
CIDRS_SETTING: Final = "[operator.destinations] allowed_cidrs"
HOSTS_SETTING: Final = "[operator.destinations] allowed_hosts"
CIDRS_VALUE: Final = "operator.destinations.allowedCidrs"
HOSTS_VALUE: Final = "operator.destinations.allowedHosts"

#: Cloud metadata and credential services: AWS (IMDS, ECS task credentials, EKS Pod Identity,
#: IPv4 and IPv6), GCP, Azure, Oracle, DigitalOcean, OpenStack (169.254.169.254), Azure's
#: WireServer, Alibaba Cloud, and Oracle Cloud's older address.
METADATA_ADDRESSES: Final = tuple(
    ipaddress.ip_network(a)
    for a in (
        "169.254.169.254/32",
        "169.254.170.2/32",
        "169.254.170.23/32",
        "fd00:ec2::254/128",
        "fd00:ec2::23/128",
        "168.63.129.16/32",
        "100.100.100.200/32",
        "192.0.0.192/32",
    )
)
#: Names of metadata services, refused before any lookup.
METADATA_HOSTS: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
_LABEL: Final = r"[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?"
_HOST: Final = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


@dataclass(frozen=True)
class Rule:
    """One kind of address refused unless listed."""

    name: str
    what: str
    networks: tuple[IPNetwork, ...]
    #: Lifted only by listing the address alone, never by a wider range.
    exact: bool = False


RULES: Final = (
    Rule("metadata", "a cloud metadata address", METADATA_ADDRESSES, exact=True),
    Rule(
        "link-local",
        "a link-local address, a service of the node or its network link",
        (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10")),
    ),
    Rule(
        "loopback",
        "a loopback address, the operator's own machine",
        tuple(ipaddress.ip_network(n) for n in ("127.0.0.0/8", "::1/128", "0.0.0.0/8", "::/128")),
    ),
)


@dataclass(frozen=True)
class Refusal:
    """Why the operator will not connect to ``address`` (reached through ``host``)."""

    host: str
    address: str
    rule: str
    what: str
    #: The entry that would allow it, and the setting it goes in (file, chart).
    allow: str
    setting: str
    value: str

    @property
    def message(self) -> str:
        through = f" ({self.host})" if self.host and self.host != self.address else ""
        return (
            f"the operator refuses to connect to {self.address}{through}: it is {self.what} "
            f'(destination rule "{self.rule}"); nothing was sent. If the operator should '
            f"reach it, add {self.allow} to {self.setting} (the chart's {self.value})"
        )


def plain(address: IPAddress) -> IPAddress:
    """The address a connection really reaches: an IPv4 address written as IPv6 (mapped, or
    NAT64's well-known prefix) as that IPv4 address."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.scope_id:
            return ipaddress.IPv6Address(address.compressed.partition("%")[0])
    return address


class DestinationSettings(BaseModel):
    """``[operator.destinations]``: what the operator may connect to despite the rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    allowed_cidrs: tuple[str, ...] = Field(
        default=(),
        description="Address ranges (CIDR) the operator may connect to although a rule "
        "refuses them: loopback, link-local; a metadata address only when listed alone "
        "(169.254.169.254/32).",
    )
    allowed_hosts: tuple[str, ...] = Field(
        default=(),
        description="Host names the operator may connect to whatever they resolve to "
        "(their DNS is trusted), a metadata name such as metadata.google.internal included.",
    )

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=True)
            except ValueError as exc:
                raise ValueError(
                    f"{cidr!r} is not a CIDR range such as 10.0.0.0/8 ({exc})"
                ) from None
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for host in value:
            if not _HOST.match(host.lower().rstrip(".")):
                raise ValueError(
                    f"{host!r} is not a host name (no scheme, port or path: search.example.com)"
                )
        return tuple(h.lower().rstrip(".") for h in value)

    @property
    def networks(self) -> tuple[IPNetwork, ...]:
        return tuple(ipaddress.ip_network(c) for c in self.allowed_cidrs)

    def trusts(self, host: str) -> bool:
        """Whether ``host`` is listed by name (and what it resolves to is not checked)."""
        return _name(host) in self.allowed_hosts

    def refuse_name(self, host: str) -> Refusal | None:
        """Why a connection to ``host`` is refused before it is even looked up, if it is: a
        metadata service's name, not listed."""
        name = _name(host)
        if name in METADATA_HOSTS and name not in self.allowed_hosts:
            return Refusal(
                host=host,
                address=name,
                rule="metadata",
                what="the name of a cloud metadata service",
                allow=name,
                setting=HOSTS_SETTING,
                value=HOSTS_VALUE,
            )
        return None

    def refuse_address(self, address: str | IPAddress, host: str = "") -> Refusal | None:
        """Why a connection to ``address`` (resolved from ``host``) is refused, if it is."""
        reached = plain(ipaddress.ip_address(address) if isinstance(address, str) else address)
        allowed = self.networks
        for rule in RULES:
            if not any(reached in n for n in rule.networks if n.version == reached.version):
                continue
            if rule.exact:
                lifted = any(n.num_addresses == 1 and n.network_address == reached for n in allowed)
            else:
                lifted = any(reached in n for n in allowed if n.version == reached.version)
            if lifted:
                return None
            alone = f"{reached}/{reached.max_prefixlen}"
            return Refusal(
                host=host,
                address=str(reached),
                rule=rule.name,
                what=rule.what,
                allow=alone,
                setting=CIDRS_SETTING,
                value=CIDRS_VALUE,
            )
        return None


#: What `tiny-harness up` allows: tool servers and agents on the developer's own machine.
LOCAL_DEVELOPMENT: Final = DestinationSettings(allowed_cidrs=("127.0.0.0/8", "::1/128"))


def _name(host: str) -> str:
    return host.strip("[]").lower().rstrip(".")
