"""Fixtures for the web UI's tests: Debian's Chromium driven by Playwright, against the real
gateway, operator and control plane of the integration tests (their fixtures, imported here),
with the scripted model.

Every screen a test reaches is checked with :meth:`Browser.check`: axe-core (from the web UI's
npm dependencies, injected into every page) must find no violation, in the light theme and in
the dark one, and a screenshot of each is written to ``docs/screens/web/`` for the README.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import pytest
from playwright.async_api import Browser as Chromium
from playwright.async_api import BrowserContext, Page, async_playwright, expect

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.conftest import gateway, users  # noqa: F401 (the shared fixtures)
from tests.integration.gateway_support import GatewayProcess, Replicas
from tiny_harness.a2a_gateway.web import ASSETS, BUILD_HINT, built
from tiny_harness.kube.crd import REPO_ROOT

CHROMIUM: Final = Path("/usr/bin/chromium")
# As root in a container, and offline: no sandbox, no GPU, and none of Chromium's own calls
# home (this machine's network refuses them, many at a time).
CHROMIUM_ARGS: Final = (
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
AXE: Final = REPO_ROOT / "web/node_modules/axe-core/axe.min.js"
SCREENS: Final = REPO_ROOT / "docs/screens/web"
WIDE: Final = {"width": 1280, "height": 860}

expect.set_options(timeout=30_000)


@pytest.fixture(scope="session")
async def chromium() -> AsyncIterator[Chromium]:
    """One headless Chromium for the session; each test opens its own contexts."""
    assert CHROMIUM.is_file(), f"{CHROMIUM} is missing: apt-get install -y chromium"
    assert AXE.is_file(), f"{AXE} is missing: {BUILD_HINT}"
    assert built(ASSETS), f"the web UI is not built: {BUILD_HINT}"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS)
        )
        yield browser
        await browser.close()


@pytest.fixture(scope="session")
def screens() -> Path:
    """The screenshots' folder; each check writes (over) its own two files."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    return SCREENS


# Runs in the page: axe-core over the whole document, the violations as plain data.
_AXE_RUN: Final = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.join(" ")),
  }));
}"""


class Browser:
    """Pages of the web UI for one test, and the check every screen passes."""

    def __init__(self, chromium: Chromium, screens: Path) -> None:
        self.chromium = chromium
        self.screens = screens
        self.contexts: list[BrowserContext] = []
        #: The script errors each page threw: a check fails on any.
        self.errors: dict[Page, list[str]] = {}

    async def context(self, *, viewport: dict[str, int] = WIDE) -> BrowserContext:
        """A fresh browser profile (its own storage, so its own sign-in)."""
        context = await self.chromium.new_context(viewport=viewport, color_scheme="light")
        await context.add_init_script(path=str(AXE))
        self.contexts.append(context)
        return context

    async def page(
        self,
        replica: GatewayProcess,
        *,
        context: BrowserContext | None = None,
        query: str = "",
        viewport: dict[str, int] = WIDE,
    ) -> Page:
        """A tab on the UI of ``replica`` (``query``: ``?task=ID``, ``?new``)."""
        context = context or await self.context(viewport=viewport)
        page = await context.new_page()
        errors = self.errors.setdefault(page, [])
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.set_default_timeout(30_000)
        await page.goto(f"{replica.url}/ui/{query}")
        return page

    async def sign_in(self, page: Page, participant: str) -> None:
        await page.get_by_label("Your participant id").fill(participant)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_text(f"Signed in as {participant}")).to_be_visible()

    async def check(self, page: Page, name: str) -> None:
        """No axe-core violation on the screen as it is, in either theme; a screenshot of each
        theme in ``docs/screens/web/<name>-<theme>.png``; no script error so far."""
        for theme in ("light", "dark"):
            await page.emulate_media(color_scheme=theme)
            violations: list[dict[str, Any]] = await page.evaluate(_AXE_RUN)
            assert violations == [], f"{name} ({theme}): {json.dumps(violations, indent=1)}"
            await page.screenshot(path=str(self.screens / f"{name}-{theme}.png"))
        await page.emulate_media(color_scheme="light")
        assert self.errors.get(page) == [], self.errors.get(page)

    async def close(self) -> None:
        for context in self.contexts:
            await context.close()


@pytest.fixture
async def browser(chromium: Chromium, screens: Path) -> AsyncIterator[Browser]:
    opened = Browser(chromium, screens)
    yield opened
    await opened.close()


#: Start the scripted model (answering the given replies in turn), an operator and a gateway
#: replica (keyword arguments: its [gateway] settings); the replica, ready.
Harness = Callable[..., Awaitable[GatewayProcess]]


@pytest.fixture
def harness(
    model_server: ModelServer,
    operator: Callable[..., OperatorProcess],
    gateway: Replicas,  # noqa: F811 (the shared fixture, imported above)
) -> Harness:
    async def start(*replies: str, **settings: Any) -> GatewayProcess:
        await model_server.control.script([{"type": "text", "text": r} for r in replies])
        operator()
        return gateway(**settings)

    return start
