"""A stand-in for the API server's custom-object collections, on loopback HTTP, for the unit
tests of the code that speaks the list and watch protocol (kube/watching.py) and writes a
status on a version (kube/declared.py): the real client talks to it over a real socket.

It keeps one collection's objects and the version counter, answers a list with every object
and the counter, and answers each watch with the next script the test queued (the events to
send, each after the step the test waits on), then holds the watch open. What a test needs
to arrange (the history gone, the server refusing) is a script step or a counter of refusals.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from kubernetes_asyncio import client

from tiny_harness.kube.names import GROUP, VERSION

Obj = dict[str, Any]

#: One step of a watch's script: a change to make (then sent as its event), or an error event.
Step = Callable[["FakeCollection"], Awaitable[Obj | None]]


@dataclass
class FakeCollection:
    """One namespace's objects of one plural, as the API server would keep them."""

    namespace: str
    plural: str
    objects: dict[str, Obj] = field(default_factory=dict)
    version: int = 100
    #: What the next watches send, one script per watch request.
    scripts: list[list[Step]] = field(default_factory=list)
    #: How many list requests to refuse (500) before answering.
    refuse_lists: int = 0
    lists: int = 0
    #: The label selector of each list request, as sent ("" for none).
    selectors: list[str] = field(default_factory=list)
    #: Whether a list applies its label selector (the test's objects carry their labels).
    selects: bool = False
    watches: int = 0
    #: Status patches received: (name, body).
    patches: list[tuple[str, Obj]] = field(default_factory=list)
    #: Set when the server stops: the watches held open end.
    closing: asyncio.Event = field(default_factory=asyncio.Event)

    # -- what a test does to the collection ---------------------------------------------------

    def put(self, name: str, **fields: Any) -> Obj:
        """Create or change an object: a new resourceVersion, as etcd would give it."""
        self.version += 1
        obj = self.objects.get(name) or {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Thing",
            "metadata": {"name": name, "namespace": self.namespace, "generation": 1},
        }
        obj = {
            **obj,
            **fields,
            "metadata": {**obj["metadata"], "resourceVersion": str(self.version)},
        }
        self.objects[name] = obj
        return obj

    def delete(self, name: str) -> Obj:
        self.version += 1
        return self.objects.pop(name)

    # -- script steps -------------------------------------------------------------------------

    @staticmethod
    def modified(name: str, **fields: Any) -> Step:
        async def step(collection: FakeCollection) -> Obj:
            return {"type": "MODIFIED", "object": collection.put(name, **fields)}

        return step

    @staticmethod
    def expired() -> Step:
        """The history the watch started from is gone: the ERROR event the API server sends."""

        async def step(collection: FakeCollection) -> Obj:
            return {
                "type": "ERROR",
                "object": {"kind": "Status", "code": 410, "message": "too old resource version"},
            }

        return step

    @staticmethod
    def meanwhile(change: Callable[[FakeCollection], object]) -> Step:
        """A change no event tells of (it happened while the watch was away)."""

        async def step(collection: FakeCollection) -> None:
            change(collection)
            return None

        return step

    # -- the HTTP side ------------------------------------------------------------------------

    async def collection(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("true", "True", "1"):
            return await self._watch(request)
        self.lists += 1
        if self.refuse_lists:
            self.refuse_lists -= 1
            return web.json_response({"kind": "Status", "code": 500}, status=500)
        selector = request.query.get("labelSelector", "")
        self.selectors.append(selector)
        return web.json_response(
            {
                "kind": "List",
                "metadata": {"resourceVersion": str(self.version)},
                "items": [
                    o for o in self.objects.values() if not self.selects or _selects(selector, o)
                ],
            }
        )

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        self.watches += 1
        script = self.scripts.pop(0) if self.scripts else []
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        for step in script:
            event = await step(self)
            if event is not None:
                await response.write(json.dumps(event).encode() + b"\n")
            if event is not None and event["type"] == "ERROR":
                return response
        await self.closing.wait()  # held open, as a watch is, until the server stops
        return response

    async def status(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await request.json()
        self.patches.append((name, body))
        obj = self.objects.get(name)
        if obj is None:
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != obj["metadata"]["resourceVersion"]:
            return web.json_response({"kind": "Status", "code": 409}, status=409)
        return web.json_response(self.put(name, status=body.get("status") or {}))

    async def one(self, request: web.Request) -> web.Response:
        obj = self.objects.get(request.match_info["name"])
        if obj is None:
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        return web.json_response(obj)


def _selects(selector: str, obj: Obj) -> bool:
    """Whether a label selector of equalities (``k=v``) and sets (``k in (a,b)``) selects
    ``obj``, as the API server reads one."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    terms, depth, term = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(term)
            term = ""
        else:
            term += char
    terms.append(term)
    for raw in (t.strip() for t in terms if t.strip()):
        if " in " in raw:
            key, _, values = raw.partition(" in ")
            wanted = {v.strip() for v in values.strip().strip("()").split(",")}
            if labels.get(key.strip()) not in wanted:
                return False
        else:
            key, _, value = raw.partition("=")
            if labels.get(key.strip()) != value.lstrip("=").strip():
                return False
    return True


@asynccontextmanager
async def serving(collection: FakeCollection) -> AsyncIterator[client.ApiClient]:
    """The collection served on loopback, and a client of it (closed at the end)."""
    base = f"/apis/{GROUP}/{VERSION}/namespaces/{collection.namespace}/{collection.plural}"
    app = web.Application()
    app.router.add_get(base, collection.collection)
    app.router.add_get(base + "/{name}", collection.one)
    app.router.add_patch(base + "/{name}/status", collection.status)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    api = client.ApiClient(configuration=configuration)
    try:
        yield api
    finally:
        collection.closing.set()
        await api.close()
        await runner.cleanup()
