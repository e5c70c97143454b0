"""The web UI resumes a task's stream (Playwright on Debian's Chromium, the real gateway and
control plane): the gateway replaced while the agent speaks, the page shows every message once
and in order across it, which only a stream resumed from its last event id (Last-Event-ID) can
do; and a stream past the participant's limit is said once, plainly, and not tried again.

The task's changes are written here as the operator writes them (status PATCHes), so that the
agent speaks while no gateway is there; no operator runs."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Browser
from tests.integration.gateway_support import Replicas, agent_says, alices_task
from tiny_harness.a2a_gateway.card import REST_PREFIX

pytestmark = pytest.mark.controlplane


def log(page: Page) -> Any:
    return page.get_by_role("log", name="Messages")


async def test_a_gateway_replaced_mid_conversation_the_page_loses_nothing_and_shows_nothing_twice(
    browser: Browser, api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway()
    tasks = await alices_task(api, namespace, "talk")
    page = await browser.page(replica, query="?task=talk")
    await browser.sign_in(page, "alice")
    lines = log(page).locator(".line .text")
    await expect(lines).to_have_text(["one"])
    await agent_says(tasks, "talk", "two")
    await expect(lines).to_have_text(["one", "two"])

    replica.stop()  # the gateway's pod replaced: gone, then back at the same address
    banner = page.get_by_role("status").filter(has_text="Reconnecting…")
    await expect(banner).to_contain_text("The gateway cannot be reached")
    await agent_says(tasks, "talk", "three")
    await tasks.patch_status("talk", {"runner": None})  # nothing a participant sees
    await agent_says(tasks, "talk", "four")
    replica.restart()

    await expect(lines).to_have_text(["one", "two", "three", "four"])
    await expect(banner).to_be_hidden()
    await agent_says(tasks, "talk", "five")
    await expect(lines).to_have_text(["one", "two", "three", "four", "five"])


def refused_streams(metrics: str) -> float:
    match = re.search(
        r'tiny_harness_gateway_requests_total\{method="SubscribeToTask",'
        r'outcome="too_many_streams"\} ([0-9.]+)',
        metrics,
    )
    return float(match.group(1)) if match else 0.0


async def test_a_stream_past_the_participants_limit_is_said_once_and_not_tried_again(
    browser: Browser, api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway(max_streams_per_participant=1)
    await alices_task(api, namespace, "busy")
    headers = {"X-Participant-Id": "alice", "Accept": "text/event-stream", "A2A-Version": "1.0"}
    # Alice's one stream on this gateway is open elsewhere (another tab, a terminal).
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http,
        http.stream(
            "GET", f"{replica.url}{REST_PREFIX}/tasks/busy:subscribe", headers=headers
        ) as held,
    ):
        assert held.status_code == 200
        page = await browser.page(replica, query="?task=busy")
        await browser.sign_in(page, "alice")
        refused = page.get_by_role("status").filter(has_text="Not following this task live")
        await expect(refused).to_contain_text("alice has 1 streams open on this gateway")
        await expect(refused).to_contain_text("Reload the page to follow it again.")
        # What the page read still shows.
        await expect(log(page).locator(".line .text")).to_have_text(["one"])
        await asyncio.sleep(3)  # six pauses' worth of the first: no attempt was made since
        assert refused_streams(replica.metrics()) == 1
        await expect(refused).to_be_visible()
        await browser.check(page, "not-following")
