"""The web UI, served by the gateway at ``/ui/`` from the same origin as its A2A endpoints.

The UI is an A2A client of this gateway and nothing more (its TypeScript sources are in
``web/``; ``make web`` builds them into :data:`ASSETS`, which the package ships). Serving it
here means ``make run`` and the chart need no extra process, and the browser's calls are
same-origin, so no CORS rule has to be opened. The assets are public, like the agent card:
every A2A call the page makes still names its participant and is held to the same rules.

Besides the files, the UI reads ``/ui/config.json``, how this gateway learns who is calling (a
participant id in header mode, a bearer token in token-review mode), which the agent card does
not say; and at sign-in ``/ui/whoami``, who the gateway takes the caller for, checked exactly
as every A2A call is (a token's user is known only to the gateway). When the assets were not
built the gateway still runs, and ``/ui/`` says how to build them.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from tiny_harness.a2a_gateway.identity import PARTICIPANT_HEADER, Participant, RequireParticipant
from tiny_harness.core.settings import GatewaySettings

UI_PATH: Final = "/ui"
#: Who the gateway takes the caller for: under the public UI path, yet authenticated.
WHOAMI_PATH: Final = f"{UI_PATH}/whoami"
#: Where ``make web`` (vite) writes the built UI; package data, not in git.
ASSETS: Final = Path(__file__).with_name("webui")
#: Vite names every file under assets/ by its content hash, so those never change.
_HASHED: Final = "/assets/"
# The page loads only its own scripts and styles and talks only to this origin; agent text is
# rendered as text, and this keeps it so even if a bug let markup through.
_CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
BUILD_HINT: Final = "make web (or: cd web && npm ci && npm run build)"


def is_ui_path(path: str) -> bool:
    """Whether ``path`` is the UI's (public, like the agent card)."""
    return path == UI_PATH or path.startswith(f"{UI_PATH}/")


def built(assets: Path = ASSETS) -> bool:
    return (assets / "index.html").is_file()


class _Assets(StaticFiles):
    """The built files, with the page's security headers; hashed files cached for good."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(_HEADERS)
        hashed = _HASHED in str(scope.get("path", ""))
        response.headers["Cache-Control"] = (
            "public, max-age=31536000, immutable" if hashed else "no-cache"
        )
        return response


def _not_built(assets: Path) -> Response:
    body = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>tiny-harness: web UI not "
        "built</title><main><h1>The web UI is not built</h1><p>This gateway runs, and every A2A "
        f"endpoint works, but it has no UI assets in <code>{html.escape(str(assets))}</code>. "
        f"Build them from the repository with <code>{html.escape(BUILD_HINT)}</code>, then "
        "reload this page.</p></main></html>"
    )
    return HTMLResponse(body, status_code=404, headers=_HEADERS)


class _UI:
    """The files, or (until they are built) the page that says how to build them; asked at
    each request, so a build made while the gateway runs shows on the next reload."""

    def __init__(self, assets: Path) -> None:
        self.assets = assets
        self.files = _Assets(directory=assets, html=True, check_dir=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if built(self.assets):
            await self.files(scope, receive, send)
        else:
            await _not_built(self.assets)(scope, receive, send)


def ui_routes(settings: GatewaySettings, assets: Path = ASSETS) -> list[BaseRoute]:
    """``/ui`` (to ``/ui/``), ``/ui/config.json``, ``/ui/whoami`` and the built files."""

    async def to_index(request: Request) -> Response:
        return RedirectResponse(f"{UI_PATH}/", status_code=308)

    async def config(request: Request) -> Response:
        return JSONResponse(
            {
                "identity": settings.participant_identity,
                "participant_header": PARTICIPANT_HEADER,
            },
            headers={"Cache-Control": "no-cache", **_HEADERS},
        )

    async def whoami(request: Request) -> Response:
        user = request.user
        assert isinstance(user, Participant)  # RequireParticipant let only a participant by
        return JSONResponse(
            {"participant": user.participant_id}, headers={"Cache-Control": "no-store"}
        )

    # The UI's paths are public (the files must load before anyone signs in), so this one
    # asks for a participant itself, with the same answer as an A2A call that names none.
    identified = RequireParticipant(
        request_response(whoami),
        settings.participant_identity,
        public_paths=frozenset(),
        audiences=settings.token_audiences,
    )
    return [
        Route(UI_PATH, to_index, methods=["GET", "HEAD"]),
        Route(f"{UI_PATH}/config.json", config, methods=["GET"]),
        Route(WHOAMI_PATH, identified, methods=["GET"]),
        Mount(UI_PATH, app=_UI(assets)),
    ]
