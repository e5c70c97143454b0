"""Files attached in the TUI, checked before anything is sent by the gateway's rules: a file
past the message's bound, files together past it, a directory or a missing path are each
refused with a sentence saying why; a kind no model can be given, or one its name does not
tell, is attached and said so; an attached file is named as the harness names it, in the line
above the composer and in the conversation, once even when the history's text names it too."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from a2a.types import Message, Part, Role

from tiny_harness.core.sizes import FILE_BYTES
from tiny_harness.tui.attach import AttachError, attach, encoded, shown
from tiny_harness.tui.view import TaskView, text_of

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR chart"


def refusal(path: Path, *already: Path) -> str:
    with pytest.raises(AttachError) as refused:
        attach(path, [attach(p) for p in already])
    return str(refused.value)


def test_an_image_and_a_text_are_attached_with_their_types_and_named_as_the_harness_names_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "chart.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("Release 1.2\n")
    (tmp_path / "rows.json").write_text('{"a": 1}\n')
    chart = attach(tmp_path / "chart.png")
    notes = attach(tmp_path / "notes.md", [chart])
    assert (chart.name, chart.media_type, chart.data) == ("chart.png", "image/png", PNG)
    assert notes.media_type == "text/markdown"
    assert attach(tmp_path / "rows.json").media_type == "application/json"
    assert chart.line() == f"[file chart.png (image/png, {len(PNG)} B)]"
    assert chart.unread is None
    assert notes.unread is None
    part = chart.part()
    assert (part.raw, part.media_type, part.filename) == (PNG, "image/png", "chart.png")
    assert shown([chart, notes]) == (
        f"Attached: [file chart.png (image/png, {len(PNG)} B)] "
        "[file notes.md (text/markdown, 12 B)] · f9 drops the last"
    )
    assert shown([]) == ""


def test_a_kind_no_model_is_given_is_attached_and_said_so(tmp_path: Path) -> None:
    (tmp_path / "logs.zip").write_bytes(b"PK\x03\x04")
    (tmp_path / "Makefile").write_text("all:\n")
    zipped = attach(tmp_path / "logs.zip")
    assert zipped.media_type == "application/zip"
    assert zipped.unread == "files of type application/zip cannot be given to a model"
    # A name that tells no kind: opaque bytes, as the gateway takes a file sent without a type.
    opaque = attach(tmp_path / "Makefile")
    assert opaque.media_type == "application/octet-stream"
    assert opaque.unread is not None
    assert attach(tmp_path / "Makefile").part().media_type == "application/octet-stream"
    assert shown([zipped]) == (
        "Attached: [file logs.zip (application/zip, 4 B)] (kept with the task, and the model "
        "told only its name) · f9 drops the last"
    )


def test_a_file_past_the_messages_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "fits.txt").write_bytes(b"x" * FILE_BYTES)
    assert len(attach(tmp_path / "fits.txt").data) == FILE_BYTES
    (tmp_path / "big.log").write_bytes(b"x" * (FILE_BYTES + 1))
    assert refusal(tmp_path / "big.log") == (
        "big.log is 192 KiB; the harness takes files of at most 192 KiB in a message and has "
        "no file store for larger ones: send a smaller file, or (images and PDFs) an https URL "
        "to it from another client"
    )
    # Together: two files that fit alone do not fit in one message.
    (tmp_path / "half.txt").write_bytes(b"y" * (FILE_BYTES // 2 + 3))
    assert refusal(tmp_path / "half.txt", tmp_path / "fits.txt").startswith(
        "half.txt (96 KiB) would take the files attached to 288 KiB; a message carries at "
        "most 192 KiB of files"
    )
    assert encoded(3) == 4
    assert encoded(4) == 8


def test_a_directory_or_a_missing_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plots.png").mkdir()
    assert (
        refusal(tmp_path / "plots.png") == f"cannot attach {tmp_path}/plots.png: it is not a file"
    )
    assert refusal(tmp_path / "gone.txt") == (
        f"cannot attach {tmp_path}/gone.txt: No such file or directory"
    )


def test_a_sent_file_shows_as_its_line_once() -> None:
    data = base64.b64encode(PNG).decode()
    line = f"[file chart.png (image/png, {len(PNG)} B)]"
    sent = Message(
        message_id="m1",
        role=Role.ROLE_USER,
        parts=[Part(text="Look"), Part(raw=PNG, media_type="image/png", filename="chart.png")],
    )
    assert text_of(sent) == f"Look\n{line}"
    # The history's text names the file already (the harness's message text): not twice.
    history = Message(
        message_id="m1",
        role=Role.ROLE_USER,
        parts=[
            Part(text=f"Look\n{line}"),
            Part(raw=PNG, media_type="image/png", filename="chart.png"),
        ],
    )
    assert text_of(history) == f"Look\n{line}"
    assert data  # the line's size is the bytes', not the base64's
    linked = Message(
        message_id="m2",
        role=Role.ROLE_USER,
        parts=[Part(url="https://example.com/a.pdf", media_type="application/pdf")],
    )
    assert text_of(linked) == "[file https://example.com/a.pdf (application/pdf)]"
    view = TaskView("trip", "alice")
    view.take_message(sent)
    view.take_message(history)
    assert [(ln.who, ln.text) for ln in view.lines] == [("you", f"Look\n{line}")]
