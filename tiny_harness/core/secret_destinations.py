"""Where a Secret's values may be sent: origins, and the annotation that binds a Secret to an
object *and* the origins that object may send its values to.

Naming the object alone is not enough: whoever may patch a ``HarnessToolServer`` or a
``HarnessAgent`` (or delete it and create another under the same name) could point it at a
host of their own and receive the header. So a Secret's annotation lists entries
``<object name>@<origin>``, an origin being ``scheme://host[:port]`` (no path)::

    tiny-harness.madarauchiha-314.github.io/tool-servers: search@https://search.example.com
    tiny-harness.madarauchiha-314.github.io/agents: >-
      travel@https://travel.example.com, travel@https://api.travel.example.com:8443

Entries are separated by commas (or white space); the same object may be named with several
origins. An entry that names only the object (the old form) grants nothing, and the condition
that refuses it says what to write instead. The operator checks the origin of every URL it is
about to call against these, at each spec change and again at each request, just before the
headers are attached (:class:`BoundHeader`).
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Collection, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Final

#: The form of one entry, as the messages show it.
ENTRY_FORM: Final = "<name>@<scheme>://<host>[:<port>]"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_SEPARATORS: Final = re.compile(r"[,\s]+")


class OriginError(ValueError):
    """Text that is not an http(s) origin or URL; the message says what is wrong."""


def origin_of(url: str) -> str:
    """The origin of an http(s) URL, normalised: scheme and host in lower case, an IPv6 host
    in brackets, the default port left out (``https://a.example:443/x`` is
    ``https://a.example``)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise OriginError(f"{url!r} is not a URL with a valid port") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise OriginError(f"{url!r} is not an http:// or https:// URL")
    if parts.username is not None or parts.password is not None:
        raise OriginError(f"{url!r} carries credentials in its host part")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OriginError(f"{url!r} has no host")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        shown = host
    else:
        shown = f"[{address.compressed}]" if address.version == 6 else address.compressed
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


def parse_origin(text: str) -> str:
    """An origin as a person writes one (``scheme://host[:port]``, a trailing ``/`` at most),
    normalised as :func:`origin_of` does; :class:`OriginError` for anything more or less."""
    parts = urllib.parse.urlsplit(text.strip())
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise OriginError(f"{text!r} is not an origin: leave out the path ({ENTRY_FORM})")
    return origin_of(text)


@dataclass(frozen=True)
class Grant:
    """One entry of a Secret's annotation: the object it names, and the origin it may send
    to (None: the old form, which names the object alone and grants nothing)."""

    name: str
    origin: str | None
    text: str


@dataclass(frozen=True)
class Grants:
    """A Secret's annotation, parsed: its entries, and those that could not be read."""

    entries: tuple[Grant, ...] = ()
    invalid: tuple[tuple[str, str], ...] = ()

    def origins_for(self, name: str) -> frozenset[str]:
        """Where the Secret lets object ``name`` send its values."""
        return frozenset(g.origin for g in self.entries if g.name == name and g.origin)

    def names_without_origin(self, name: str) -> bool:
        """Whether an old-form entry names ``name`` (so its owner meant to allow it)."""
        return any(g.name == name and g.origin is None for g in self.entries)

    def invalid_for(self, name: str) -> tuple[tuple[str, str], ...]:
        """The unreadable entries that seem to name ``name``: (entry, why)."""
        return tuple((t, why) for t, why in self.invalid if t.partition("@")[0] == name)


def parse_grants(text: str | None) -> Grants:
    """A Secret's annotation value (empty or missing: no entries)."""
    entries: list[Grant] = []
    invalid: list[tuple[str, str]] = []
    for entry in _SEPARATORS.split(text or ""):
        if not entry:
            continue
        name, at, where = entry.partition("@")
        if not at:
            entries.append(Grant(name=entry, origin=None, text=entry))
            continue
        if not name:
            invalid.append((entry, f"it names no object ({ENTRY_FORM})"))
            continue
        try:
            entries.append(Grant(name=name, origin=parse_origin(where), text=entry))
        except OriginError as exc:
            invalid.append((entry, str(exc)))
    return Grants(tuple(entries), tuple(invalid))


def entry(name: str, origin: str) -> str:
    """The annotation entry that lets ``name`` send to ``origin``."""
    return f"{name}@{origin}"


@dataclass(frozen=True)
class BoundHeader:
    """A header whose value came from a Secret, with the origins the Secret lets it go to.
    The value is never shown (not in ``repr``, not in any message)."""

    name: str
    value: str = field(repr=False)
    origins: frozenset[str]
    #: The Secret it came from, for messages.
    secret: str = ""

    def may_go_to(self, url: str) -> bool:
        """Whether this header may be sent with a request to ``url``."""
        try:
            return origin_of(url) in self.origins
        except OriginError:
            return False


def attach_bound(
    headers: MutableMapping[str, str], bound: Iterable[BoundHeader], url: str
) -> tuple[BoundHeader, ...]:
    """Set in ``headers`` each bound header that may go to ``url``, and remove each one that
    may not (a redirect copies the previous request's headers); returns those withheld."""
    withheld: list[BoundHeader] = []
    for header in bound:
        if header.may_go_to(url):
            headers[header.name] = header.value
        else:
            headers.pop(header.name, None)
            withheld.append(header)
    return tuple(withheld)


def not_granted(
    *,
    secret: str,
    annotation: str,
    user: str,
    name: str,
    origin: str,
    where: str,
    granted: Collection[str],
) -> str:
    """Why a Secret's values may not go to ``origin`` (``where``: what that origin is, such
    as "the origin of spec.url"), saying what to add if that is where they should go."""
    to = ", ".join(sorted(granted))
    return (
        f"Secret {secret} lets {user} {name} send its values only to {to}, not to {origin} "
        f"({where}): if they are meant to go there, add {entry(name, origin)} to the Secret's "
        f"annotation {annotation}"
    )
