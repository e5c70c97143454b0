"""kopf's listings and watch lines decode through the bound (operator/kopf_decoding.py)."""

from __future__ import annotations

import aiohttp
from kopf._cogs.clients import api as kopf_api

from tiny_harness.core.json_bounds import TOO_DEEP, loads_document
from tiny_harness.operator import kopf_decoding


def test_kopfs_watch_lines_and_listings_read_an_object_too_deep_with_its_value_cut() -> None:
    kopf_decoding.bound()
    kopf_decoding.bound()  # once more, as a second operator in one process would: no change
    line = '{"type":"ADDED","object":{"name":"deep","data":' + "[" * 5000 + "]" * 5000 + "}}"

    event = kopf_api.json.loads(line)

    assert event["object"]["name"] == "deep"
    value = event["object"]["data"]
    while isinstance(value, list):
        value = value[0]
    assert value == TOO_DEEP
    assert aiohttp.ClientResponse.json.__kwdefaults__ == {
        "encoding": None,
        "loads": loads_document,
        "content_type": "application/json",
    }
