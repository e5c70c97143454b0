"""Files in, end to end: an a2a-sdk client hands a task a file over each transport, and the
file reaches the scripted model in each provider's wire format, as the recorded request bytes
show; a file no adapter takes, or one past the message's bound, is refused with nothing
written."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

import httpx
import pytest
from a2a.types import Message, Part, Role
from a2a.utils.errors import InvalidParamsError

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.gateway_support import JSONRPC, REST, A2AUser, Replicas, cluster_objects
from tests.integration.kubectl_support import Harness
from tiny_harness.a2a_gateway.card import REST_PREFIX
from tiny_harness.core.sizes import FILE_BYTES
from tiny_harness.kube.crd import REPO_ROOT

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

#: Each transport, in each protocol version the gateway serves.
CLIENTS = [(JSONRPC, "1.0"), (REST, "1.0"), (JSONRPC, "0.3"), (REST, "0.3")]

#: A real PNG signature and a real PDF header: what a client would attach.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR chart"
PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n"
NOTES = "Release 1.2\n- faster sends\n"

#: How each wire format carries the three files, as the provider's API takes them.
EXPECTED = {
    "responses": [
        {"type": "input_image", "image_url": "data:image/png;base64,{png}", "detail": "auto"},
        {
            "type": "input_file",
            "filename": "spec.pdf",
            "file_data": "data:application/pdf;base64,{pdf}",
        },
        {"type": "input_text", "text": "Contents of notes.md (text/markdown):\n" + NOTES},
    ],
    "chat": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,{png}"}},
        {
            "type": "file",
            "file": {"filename": "spec.pdf", "file_data": "data:application/pdf;base64,{pdf}"},
        },
        {"type": "text", "text": "Contents of notes.md (text/markdown):\n" + NOTES},
    ],
    "messages": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "{png}"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "{pdf}"},
            "title": "spec.pdf",
        },
        {"type": "text", "text": "Contents of notes.md (text/markdown):\n" + NOTES},
    ],
}


def filled(value: object, png: str, pdf: str) -> object:
    if isinstance(value, str):
        return value.replace("{png}", png).replace("{pdf}", pdf)
    if isinstance(value, list):
        return [filled(v, png, pdf) for v in value]
    if isinstance(value, dict):
        return {k: filled(v, png, pdf) for k, v in value.items()}
    return value


def with_files(text: str) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[
            Part(text=text),
            Part(raw=PNG, media_type="image/png", filename="chart.png"),
            Part(raw=PDF, media_type="application/pdf", filename="spec.pdf"),
            Part(raw=NOTES.encode(), media_type="text/markdown", filename="notes.md"),
        ],
    )


def user_content(wire: str, body: dict[str, object]) -> list[dict[str, object]]:
    """The last user message's content in the recorded body."""
    items = body["input"] if wire == "responses" else body["messages"]
    assert isinstance(items, list)
    users = [i for i in items if isinstance(i, dict) and i.get("role") == "user"]
    content = users[-1]["content"]
    assert isinstance(content, list)
    return content


@pytest.mark.parametrize("wire", ["responses", "chat", "messages"])
async def test_a_file_sent_over_each_transport_reaches_the_model_in_its_wire_format(
    operator: Operator, model_server: ModelServer, gateway: Replicas, wire: str
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "A chart, a spec and notes."} for _ in CLIENTS]
    )
    operator(wire=wire)
    replica = gateway()
    png, pdf = base64.b64encode(PNG).decode(), base64.b64encode(PDF).decode()

    for transport, protocol in CLIENTS:
        alice = await A2AUser.connect(replica.url, "alice", transport=transport, protocol=protocol)
        asked = f"What is in these? ({transport}, {protocol})"
        try:
            events = await alice.stream(with_files(asked))
            task_id = next(e.task.id for e in events if e.HasField("task"))
            replies = [
                p.text
                for e in events
                if e.HasField("status_update")
                for p in e.status_update.status.message.parts
            ]
            assert "A chart, a spec and notes." in replies

            # The task's history gives the files back as they were sent.
            task = await alice.get(task_id)
            sent = next(m for m in task.history if m.role == Role.ROLE_USER)
            files = [(p.filename, p.media_type, p.raw) for p in sent.parts if p.raw]
            assert files == [
                ("chart.png", "image/png", PNG),
                ("spec.pdf", "application/pdf", PDF),
                ("notes.md", "text/markdown", NOTES.encode()),
            ]
        finally:
            await alice.close()

        request = (await model_server.control.requests())[-1]
        content = user_content(wire, request.body)
        assert content[1:] == filled(EXPECTED[wire], png, pdf), (transport, protocol)
        assert asked in str(content[0])
        assert f"[file chart.png (image/png, {len(PNG)} B)]" in str(content[0])


@pytest.mark.parametrize("transport", [JSONRPC, REST])
async def test_a_file_too_large_for_a_message_is_refused_naming_the_limit_and_nothing_is_written(
    gateway: Replicas, kubectl: Kubectl, transport: str
) -> None:
    alice = await A2AUser.connect(gateway().url, "alice", transport=transport)
    before = cluster_objects(kubectl)
    big = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[
            Part(text="Here is the log"),
            Part(raw=b"x" * (FILE_BYTES + 1), media_type="text/plain", filename="big.log"),
        ],
    )
    try:
        with pytest.raises(InvalidParamsError) as refused:
            await alice.stream(big)
    finally:
        await alice.close()

    reason = refused.value.message
    assert "message.parts[1]: the file big.log is 192 KiB" in reason
    assert f"files of at most {FILE_BYTES // 1024} KiB in a message" in reason
    assert "no file store" in reason
    assert cluster_objects(kubectl) == before


BINARY = base64.b64encode(b"This is test binary data").decode()


@pytest.mark.parametrize("transport", [JSONRPC, REST])
async def test_opaque_binary_data_is_taken_kept_and_named_to_the_model(
    operator: Operator, model_server: ModelServer, gateway: Replicas, transport: str
) -> None:
    """The A2A conformance suite's binary-data request, as its JSON: a text part and 24 bytes
    of ``application/octet-stream``. The task takes it and keeps the bytes; the model is told
    it has the file but cannot be given it, before the call, so no provider refuses it."""
    await model_server.control.script([{"type": "text", "text": "Noted the binary file."}])
    operator()
    replica = gateway()
    message = {
        "role": "ROLE_USER",
        "messageId": str(uuid.uuid4()),
        "parts": [
            {"text": "Processing binary data"},
            {"raw": BINARY, "mediaType": "application/octet-stream"},
        ],
    }
    headers = {"X-Participant-Id": "alice", "A2A-Version": "1.0"}
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0), headers=headers) as http:
        if transport == JSONRPC:
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message},
            }
            answer = (await http.post(replica.url, json=call)).json()
            assert "error" not in answer, answer
            task = answer["result"]["task"]
        else:
            response = await http.post(
                f"{replica.url}{REST_PREFIX}/message:send", json={"message": message}
            )
            assert response.status_code == 200, response.text
            task = response.json()["task"]
    assert task["id"]

    alice = await A2AUser.connect(replica.url, "alice", transport=transport)
    try:
        kept = await alice.get(task["id"])
    finally:
        await alice.close()
    sent = next(m for m in kept.history if m.role == Role.ROLE_USER)
    assert [(p.media_type, p.raw) for p in sent.parts if p.raw] == [
        ("application/octet-stream", b"This is test binary data")
    ]

    async def asked() -> str | NotYet:
        requests = await model_server.control.requests()
        return requests[-1].raw_body.decode() if requests else NotYet("no model call yet")

    body = await eventually_async(asked, within=60, what="the model to be called")
    assert (
        "[the file application/octet-stream (application/octet-stream) is kept with the task "
        "but could not be given to you: files of type application/octet-stream cannot be given "
        "to a model]"
    ) in body


#: Where the transcript of the file-in, artifact-out walk is written (the README shows it).
CAPTURE = REPO_ROOT / "docs" / "screens" / "files-and-artifacts.txt"
CHANGES = "- faster sends\n- streams that resume\n- approvals\n"
NOTES_MD = "# Release 1.2\n\n## Changes\n\n- Sends are faster.\n- Streams resume.\n- Approvals.\n"


async def test_a_file_in_becomes_an_artifact_out_through_a2a_and_kubectl(
    operator: Operator, model_server: ModelServer, gateway: Replicas, harness: Harness
) -> None:
    """The walk a user makes: hand a task a file over A2A, get its result back as an
    artifact, streamed, read with GetTask and downloaded with ``kubectl harness artifact``."""
    notes = base64.b64encode(NOTES_MD.encode()).decode()
    publish = {
        "name": "publish_artifact",
        "id": "call_notes",
        "arguments": {
            "name": "release-notes",
            "description": "Release notes for 1.2",
            "parts": [
                {
                    "file": {
                        "name": "release-notes.md",
                        "media_type": "text/markdown",
                        "bytes": notes,
                    }
                }
            ],
        },
    }
    await model_server.control.script(
        [
            {"type": "tool_calls", "calls": [publish]},
            {"type": "text", "text": "The release notes are the artifact release-notes."},
        ]
    )
    operator()
    alice = await A2AUser.connect(gateway().url, "alice", transport=JSONRPC)
    asked = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[
            Part(text="Write the release notes from these changes."),
            Part(raw=CHANGES.encode(), media_type="text/plain", filename="changes.txt"),
        ],
    )
    try:
        events = await alice.stream(asked)
        task_id = next(e.task.id for e in events if e.HasField("task"))
        [update] = [e.artifact_update for e in events if e.HasField("artifact_update")]
        task = await alice.get(task_id)
    finally:
        await alice.close()
    downloaded = await harness.run("artifact", task_id, "release-notes")

    # The model read the file as text, in the Responses wire format.
    first = (await model_server.control.requests())[0].body
    content = next(i for i in first["input"] if i.get("role") == "user")["content"]
    assert content[-1] == {
        "type": "input_text",
        "text": f"Contents of changes.txt (text/plain):\n{CHANGES}",
    }
    # The artifact: streamed once, whole in GetTask, byte for byte from kubectl.
    assert (update.artifact.name, update.append, update.last_chunk) == (
        "release-notes",
        False,
        True,
    )
    [artifact] = task.artifacts
    [part] = artifact.parts
    assert (artifact.name, part.filename, part.media_type, part.raw) == (
        "release-notes",
        "release-notes.md",
        "text/markdown",
        NOTES_MD.encode(),
    )
    assert downloaded.returncode == 0, downloaded.stderr
    assert downloaded.stdout == NOTES_MD

    replies = [
        p.text
        for e in events
        if e.HasField("status_update")
        for p in e.status_update.status.message.parts
        if p.text
    ]
    capture = "\n".join(
        [
            f"$ a2a send (JSON-RPC, a2a-sdk): text + changes.txt (text/plain, {len(CHANGES)} B)",
            "  alice  > Write the release notes from these changes.",
            f"           [file changes.txt (text/plain, {len(CHANGES)} B)]",
            "  model  ← input_text: Contents of changes.txt (text/plain): …",
            "  model  → publish_artifact(name=release-notes, parts=[file release-notes.md])",
            f"  stream ← artifact update: {update.artifact.name} (append={update.append}, "
            f"last_chunk={update.last_chunk}, {len(NOTES_MD)} B)",
            f"  agent  > {replies[-1]}",
            f"$ a2a get {task_id}: artifacts = "
            f"[{artifact.name}: {part.filename} ({part.media_type}, {len(part.raw)} B)]",
            f"$ kubectl harness artifact {task_id} release-notes > release-notes.md",
            *(f"  {line}" for line in downloaded.stdout.splitlines()),
            "",
        ]
    )
    CAPTURE.write_text(capture.replace(task_id, "<task>"))
