"""Which files a message may carry, and how one is named in text: any well-formed file within
the message's bound is taken; what no model can be given is said, and a refusal names the part."""

from __future__ import annotations

import base64

import pytest

from tiny_harness.core.attachments import Attachment, kind_of, media_type_of
from tiny_harness.core.inbox import MessagePart, MessageSpec, refuse_parts
from tiny_harness.core.sizes import FILE_BYTES, MESSAGE_BYTES, refuse_size


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("media_type", "kind"),
    [
        ("image/png", "image"),
        ("IMAGE/JPEG", "image"),
        ("application/pdf", "pdf"),
        ("text/csv; charset=utf-8", "text"),
        ("application/json", "text"),
        ("application/zip", None),
        ("image/svg+xml", None),
    ],
)
def test_a_media_type_is_a_kind_every_adapter_takes_or_none(
    media_type: str, kind: str | None
) -> None:
    assert kind_of(media_type) == kind


def spec(*parts: MessagePart) -> MessageSpec:
    return MessageSpec(task="release", message_id="m-1", sender="alice", parts=parts)


def test_a_message_with_files_reads_as_its_text_and_a_line_naming_each_file() -> None:
    message = spec(
        MessagePart(text="Summarise these"),
        MessagePart(raw=b64(b"x" * 2048), media_type="application/pdf", filename="spec.pdf"),
        MessagePart(url="https://files.example.test/a.png", media_type="image/png"),
    )

    assert message.text == (
        "Summarise these\n"
        "[file spec.pdf (application/pdf, 2.0 KiB)]\n"
        "[file https://files.example.test/a.png (image/png)]"
    )
    assert [a.label for a in message.attachments] == [
        "spec.pdf",
        "https://files.example.test/a.png",
    ]
    assert message.attachments[0].size == 2048


@pytest.mark.parametrize(
    ("part", "reason"),
    [
        (
            MessagePart(raw="not base64!", media_type="image/png"),
            "refused: message.parts[1]: the file's bytes are not valid base64",
        ),
        (
            MessagePart(url="http://", media_type="image/png"),
            "refused: message.parts[1]: the file's URL must be an https (or http) URL with a host",
        ),
        (
            MessagePart(url="file:///etc/passwd", media_type="text/plain"),
            "refused: message.parts[1]: the file's URL must be an https (or http) URL with a host",
        ),
    ],
)
def test_a_malformed_file_is_refused_naming_its_part(part: MessagePart, reason: str) -> None:
    refused = refuse_parts(spec(MessagePart(text="see"), part).parts)

    assert refused is not None
    assert refused.startswith(reason)


@pytest.mark.parametrize(
    ("file", "why"),
    [
        (
            Attachment(media_type="application/zip", name="a.zip", data=b64(b"PK")),
            "files of type application/zip cannot be given to a model",
        ),
        (
            Attachment(media_type="text/plain", url="https://example.test/a.txt"),
            "a text file is given only from its bytes, and this one was sent as a URL",
        ),
        (Attachment(media_type="image/png", data=b64(b"\x89PNG")), None),
        (Attachment(media_type="application/pdf", url="https://example.test/a.pdf"), None),
        (Attachment(media_type="text/csv", data=b64(b"a,b")), None),
    ],
)
def test_a_file_no_model_can_be_given_is_kept_and_says_why(
    file: Attachment, why: str | None
) -> None:
    assert (
        refuse_parts(
            spec(MessagePart(raw=file.data, url=file.url, media_type=file.media_type)).parts
        )
        is None
    )
    assert file.unread == why


def test_files_of_any_kind_within_the_bound_are_taken() -> None:
    message = spec(
        MessagePart(raw=b64(b"\x89PNG"), media_type="image/png"),
        MessagePart(raw=b64(b"{}"), media_type="application/json"),
        MessagePart(raw=b64(b"This is test binary data"), media_type="application/octet-stream"),
        MessagePart(url="https://example.test/spec.pdf", media_type="application/pdf"),
    )

    assert refuse_parts(message.parts) is None
    assert refuse_size(message) is None


def test_a_file_past_the_message_bound_is_refused_with_the_file_limit_and_what_to_do() -> None:
    fits = spec(MessagePart(raw=b64(b"x" * FILE_BYTES), media_type="image/png"))
    too_big = spec(
        MessagePart(text="and this"),
        MessagePart(raw=b64(b"x" * FILE_BYTES), media_type="image/png"),
    )

    assert refuse_size(fits) is None
    refused = refuse_size(too_big)
    assert refused is not None
    assert f"a message may carry at most {MESSAGE_BYTES // 1024} KiB" in refused
    assert f"a file at most {FILE_BYTES // 1024} KiB" in refused
    assert "no file store" in refused
    assert "send an https URL to the file" in refused


def test_a_part_has_exactly_one_kind() -> None:
    with pytest.raises(ValueError, match="each part has one of text, data, raw or url"):
        MessagePart(text="a", raw=b64(b"a"), media_type="image/png")


def test_a_text_file_reads_as_its_decoded_text() -> None:
    note = Attachment(media_type="text/plain", name="n.txt", data=b64("héllo".encode()))

    assert note.text() == "héllo"
    assert note.line() == "[file n.txt (text/plain, 6 B)]"


@pytest.mark.parametrize(
    ("name", "media_type"),
    [
        ("values.yaml", "application/yaml"),
        ("build.LOG", "text/plain"),
        ("notes.md", "text/markdown"),
        ("chart.png", "image/png"),
        ("spec.pdf", "application/pdf"),
        ("blob", "application/octet-stream"),
    ],
)
def test_a_files_name_implies_its_media_type_the_same_way_everywhere(
    name: str, media_type: str
) -> None:
    assert media_type_of(name) == media_type
    assert MessagePart.of_file(name, b"x").media_type == media_type
