"""kopf decodes our objects with the bound every other reader has (``core/json_bounds.py``).

kopf decodes the listing each watch starts with (aiohttp's ``response.json()``) and every
watch line (``json.loads``) with Python's decoder, which gives up past about a thousand levels
of nesting. One object nested that deep (a message stored in the object form before free-form
data was kept as text, or under a looser CRD) then failed kopf's watch of its whole kind, on
every restart of the watch: no message reached a turn, for any task of the namespace. kopf has
no setting for its decoder, so :func:`bound` points both at
:func:`~tiny_harness.core.json_bounds.loads_document`, which decodes what Python's decoder
does exactly as it does, and a document too deep for it with the too-deep value cut: the
object then reaches the handlers, whose parse skips and flags it (``kube/unreadable.py``).
"""

from __future__ import annotations

import types

import aiohttp
from kopf._cogs.clients import api as kopf_api

from tiny_harness.core.json_bounds import loads_document


def bound() -> None:
    """Make kopf's listings and watch lines decode through ``loads_document`` (idempotent).

    Two places, each checked so that a kopf release that moves them fails here, at start-up,
    rather than leaving the watches unbounded: the module-level ``json`` kopf's watch stream
    calls ``loads`` on, and the default decoder of aiohttp's ``ClientResponse.json`` (kopf
    passes none; the Kubernetes client this process also uses reads bodies as bytes).
    """
    if not hasattr(kopf_api, "json") or not callable(getattr(kopf_api.json, "loads", None)):
        raise RuntimeError("kopf's API client no longer decodes watch lines with json.loads")
    defaults = aiohttp.ClientResponse.json.__kwdefaults__
    if defaults is None or "loads" not in defaults:
        raise RuntimeError("aiohttp's ClientResponse.json no longer takes a loads= default")
    kopf_api.json = types.SimpleNamespace(loads=loads_document)
    defaults["loads"] = loads_document
