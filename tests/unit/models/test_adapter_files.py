"""A participant's files reach each model in its provider's own form, as the recorded request
bytes show: images and PDFs as bytes or URLs, text files as text, and a file no model is given
(an archive; a PDF at a URL on Chat Completions) as a note the model reads, never a 400."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from adapter_kit import KINDS, Kind, MakeAdapter

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.testing.model_server import ScriptedModelServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake document").decode()
NOTES = base64.b64encode("Release 1.2: faster sends, ünïcode kept.".encode()).decode()

IMAGE = Attachment(media_type="image/png", name="chart.png", data=PNG)
DOCUMENT = Attachment(media_type="application/pdf", name="spec.pdf", data=PDF)
TEXT = Attachment(media_type="text/markdown", name="notes.md", data=NOTES)
IMAGE_URL = Attachment(media_type="image/jpeg", url="https://files.example.test/photo.jpg")
PDF_URL = Attachment(media_type="application/pdf", url="https://files.example.test/spec.pdf")
ARCHIVE = Attachment(
    media_type="application/zip", name="logs.zip", data=base64.b64encode(b"PK").decode()
)

SAID_TEXT = "Contents of notes.md (text/markdown):\nRelease 1.2: faster sends, ünïcode kept."
KEPT = (
    "[the file logs.zip (application/zip) is kept with the task but could not be given to you: "
    "files of type application/zip cannot be given to a model]"
)


async def sent(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter, *files: Attachment
) -> list[dict[str, Any]]:
    """The content the adapter sent for one user message that carries ``files``."""
    adapter = await make_adapter(kind)
    await adapter.complete(
        LLMRequest(messages=(ChatMessage(role="user", content="Look at these", files=files),))
    )
    body: dict[str, Any] = server.requests[-1].body
    message = body["input"][0] if kind == "responses" else body["messages"][-1]
    assert message["role"] == "user"
    content: list[dict[str, Any]] = message["content"]
    return content


async def test_responses_takes_images_and_pdfs_as_inputs_and_text_as_text(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    content = await sent(
        "responses", server, make_adapter, IMAGE, DOCUMENT, TEXT, IMAGE_URL, PDF_URL, ARCHIVE
    )

    assert content == [
        {"type": "input_text", "text": "Look at these"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
        {
            "type": "input_file",
            "filename": "spec.pdf",
            "file_data": f"data:application/pdf;base64,{PDF}",
        },
        {"type": "input_text", "text": SAID_TEXT},
        {"type": "input_image", "image_url": IMAGE_URL.url, "detail": "auto"},
        {"type": "input_file", "file_url": PDF_URL.url},
        {"type": "input_text", "text": KEPT},
    ]


async def test_chat_completions_takes_images_and_pdf_bytes_and_names_what_it_is_not_given(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    content = await sent(
        "chat", server, make_adapter, IMAGE, DOCUMENT, TEXT, IMAGE_URL, PDF_URL, ARCHIVE
    )

    assert content == [
        {"type": "text", "text": "Look at these"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {
            "type": "file",
            "file": {"filename": "spec.pdf", "file_data": f"data:application/pdf;base64,{PDF}"},
        },
        {"type": "text", "text": SAID_TEXT},
        {"type": "image_url", "image_url": {"url": IMAGE_URL.url}},
        {
            "type": "text",
            "text": "[the file https://files.example.test/spec.pdf (application/pdf) is kept "
            "with the task but could not be given to you: Chat Completions takes a PDF only as "
            "its bytes, and this one was sent as a URL]",
        },
        {"type": "text", "text": KEPT},
    ]


async def test_anthropic_takes_images_and_documents_as_blocks_and_text_as_text(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    content = await sent(
        "messages", server, make_adapter, IMAGE, DOCUMENT, TEXT, IMAGE_URL, PDF_URL, ARCHIVE
    )

    assert content == [
        {"type": "text", "text": "Look at these"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "spec.pdf",
        },
        {"type": "text", "text": SAID_TEXT},
        {"type": "image", "source": {"type": "url", "url": IMAGE_URL.url}},
        {"type": "document", "source": {"type": "url", "url": PDF_URL.url}},
        {"type": "text", "text": KEPT},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_message_without_files_is_sent_as_before(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    await adapter.complete(LLMRequest(messages=(ChatMessage(role="user", content="hi"),)))
    body: dict[str, Any] = server.requests[-1].body
    message = body["input"][0] if kind == "responses" else body["messages"][-1]

    assert message == {"role": "user", "content": "hi"}
