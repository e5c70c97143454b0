"""The web UI as the gateway serves it: the files public (like the agent card) with their
security headers, every A2A call still held to the identity rules, the identity mode and who
the gateway takes the caller for, and a page that says how to build the UI when it is not
built. The browser tests (tests/browser/) drive the UI itself."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from kubernetes_asyncio import client
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.testclient import TestClient

from tiny_harness.a2a_gateway.app import build_app
from tiny_harness.a2a_gateway.identity import HeaderIdentity
from tiny_harness.a2a_gateway.web import ui_routes
from tiny_harness.core import extensions
from tiny_harness.core.attachments import IMAGE_TYPES, OPAQUE_TYPE, PDF_TYPE, TEXT_APPLICATION_TYPES
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import FILE_BYTES, MESSAGE_BYTES
from tiny_harness.kube.crd import REPO_ROOT


@pytest.fixture
async def gateway() -> AsyncIterator[httpx.AsyncClient]:
    """The whole gateway app, over an API server nobody answers at (nothing here reaches it)."""
    api = client.ApiClient(configuration=client.Configuration(host="http://127.0.0.1:9"))
    app = build_app(GatewaySettings(), api)
    try:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://gateway"
            ) as http,
        ):
            yield http
    finally:
        await api.close()


def ui(assets: Path, **settings: str) -> TestClient:
    app = Starlette(
        routes=ui_routes(GatewaySettings(**settings), assets),
        middleware=[Middleware(AuthenticationMiddleware, backend=HeaderIdentity())],
    )
    return TestClient(app)


async def test_the_ui_is_public_while_every_a2a_call_still_needs_a_participant(
    gateway: httpx.AsyncClient,
) -> None:
    page = await gateway.get("/ui/")
    settings = await gateway.get("/ui/config.json")
    call = await gateway.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks"})

    assert page.status_code in (200, 404)  # built, or the page saying how to build it
    assert "Content-Security-Policy" in page.headers
    assert settings.json() == {"identity": "header", "participant_header": "X-Participant-Id"}
    assert call.status_code == 401
    assert "X-Participant-Id" in call.json()["error"]["message"]


async def test_ui_without_the_slash_goes_to_the_ui(gateway: httpx.AsyncClient) -> None:
    moved = await gateway.get("/ui", follow_redirects=False)

    assert moved.status_code == 308
    assert moved.headers["location"] == "/ui/"


async def test_whoami_names_the_caller_and_refuses_an_anonymous_one_as_a2a_calls_do(
    gateway: httpx.AsyncClient,
) -> None:
    known = await gateway.get("/ui/whoami", headers={"X-Participant-Id": "alice"})
    anonymous = await gateway.get("/ui/whoami")
    malformed = await gateway.get("/ui/whoami", headers={"X-Participant-Id": " alice"})

    assert known.json() == {"participant": "alice"}
    assert anonymous.status_code == 401
    assert "X-Participant-Id" in anonymous.json()["error"]["message"]
    assert malformed.status_code == 401


def test_the_identity_mode_is_the_gateways() -> None:
    http = ui(Path("/nonexistent"), participant_identity="tokenreview")

    assert http.get("/ui/config.json").json()["identity"] == "tokenreview"


def test_built_files_are_served_with_the_pages_security_headers(tmp_path: Path) -> None:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>tiny-harness</title>")
    (tmp_path / "assets" / "index-abc123.js").write_text("console.log(1)")
    http = ui(tmp_path)

    page = http.get("/ui/")
    script = http.get("/ui/assets/index-abc123.js")

    assert page.status_code == 200
    assert "tiny-harness" in page.text
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["Cache-Control"] == "no-cache"
    assert script.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert http.get("/ui/assets/missing.js").status_code == 404


def test_without_built_files_the_ui_says_how_to_build_them_and_shows_a_build_made_later(
    tmp_path: Path,
) -> None:
    http = ui(tmp_path)

    missing = http.get("/ui/")
    (tmp_path / "index.html").write_text("<!doctype html><title>built now</title>")
    built = http.get("/ui/")

    assert missing.status_code == 404
    assert "The web UI is not built" in missing.text
    assert "make web" in missing.text
    assert "npm ci" in missing.text
    assert "built now" in built.text


def test_the_ui_spells_the_extension_keys_as_the_harness_does() -> None:
    wire = (REPO_ROOT / "web/src/wire.ts").read_text()
    spelled = dict(re.findall(r'export const (\w+) = "([^"]+)";', wire))

    for name in ("TASK_EXT_KEY", "STATUS_EXT_KEY", "COMMANDS_EXT_URI", "EVENT_MEDIA_TYPE"):
        assert spelled[name] == getattr(extensions, name), name


def test_the_ui_checks_files_by_the_harnesss_own_bounds_and_kinds() -> None:
    """web/src/attachments.ts repeats core/sizes.py and core/attachments.py in TypeScript (the
    page refuses a file before sending it): the two must say the same."""
    source = (REPO_ROOT / "web/src/attachments.ts").read_text()

    assert "export const MESSAGE_BYTES = 256 * KIB;" in source
    assert MESSAGE_BYTES == 256 * 1024
    assert "export const FILE_BYTES = (MESSAGE_BYTES * 3) / 4;" in source
    assert FILE_BYTES == MESSAGE_BYTES * 3 // 4
    assert f'export const PDF_TYPE = "{PDF_TYPE}";' in source
    assert f'export const OPAQUE_TYPE = "{OPAQUE_TYPE}";' in source
    for name, expected in (
        ("IMAGE_TYPES", IMAGE_TYPES),
        ("TEXT_APPLICATION_TYPES", TEXT_APPLICATION_TYPES),
    ):
        declared = re.search(
            rf"export const {name}: ReadonlySet<string> = new Set\(\[(.*?)\]\)", source, re.S
        )
        assert declared is not None, name
        assert set(re.findall(r'"([^"]+)"', declared.group(1))) == set(expected), name
