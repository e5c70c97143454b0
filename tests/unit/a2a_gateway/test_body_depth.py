"""A request body nested past the bound is refused before any JSON decoder sees it."""

from __future__ import annotations

import json

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tiny_harness.a2a_gateway.limits import REQUEST_DEPTH, BodySizeLimit


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"got": await request.json()})


def client() -> httpx.AsyncClient:
    app = BodySizeLimit(
        Starlette(routes=[Route("/", echo, methods=["POST"])]),
        max_bytes=1 << 20,
        public_paths=frozenset(),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw")


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


async def test_a_body_at_the_bound_goes_on_and_one_level_deeper_is_refused_400() -> None:
    async with client() as http:
        at = await http.post("/", content=nested(REQUEST_DEPTH))
        past = await http.post("/", content=nested(REQUEST_DEPTH + 1))
        deep = await http.post("/", content=nested(5000))

    assert at.status_code == 200
    assert past.status_code == deep.status_code == 400
    assert deep.json()["error"] == {
        "code": 400,
        "status": "INVALID_ARGUMENT",
        "message": f"the request body is nested more than {REQUEST_DEPTH} levels deep, and a "
        "message's data and metadata may nest at most 64 levels: flatten them, or send the "
        "data as text",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "BODY_TOO_DEEP",
                "domain": "tiny-harness.madarauchiha-314.github.io",
                "metadata": {"reason": "body_too_deep"},
            }
        ],
    }


async def test_brackets_in_the_bodys_strings_are_not_nesting() -> None:
    body = json.dumps({"text": "[" * 5000})
    async with client() as http:
        answer = await http.post("/", content=body)

    assert answer.status_code == 200
    assert answer.json() == {"got": {"text": "[" * 5000}}
