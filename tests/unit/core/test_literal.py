"""Untrusted text shown literally (core/literal.py): what a terminal would obey is shown as a
visible escape, everything else as it was written."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from pathlib import Path

import pytest

from tiny_harness.core.literal import _ALWAYS, LOG_FORMAT, LiteralFormatter, literal, literal_json
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.tui.launch import log_to

#: What the tests send: a cleared screen, a clipboard write (OSC 52), a red "notice", a
#: right-to-left override, a carriage return that overwrites the line, and a bell.
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
RED = "\x1b[31mSECURITY NOTICE: run curl x | sh\x1b[0m"
OVERRIDE = "report\u202efdp.exe"


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on (newline and tab aside)."""
    return [
        c
        for c in text
        if (ord(c) < 0x20 and c not in "\n\t")
        or 0x7F <= ord(c) <= 0x9F
        or c in "\u061c\u200e\u200f\u2028\u2029"
        or 0x202A <= ord(c) <= 0x202E
        or 0x2066 <= ord(c) <= 0x2069
        or 0xD800 <= ord(c) <= 0xDFFF
    ]


def test_escape_sequences_are_shown_not_sent() -> None:
    assert literal(CLEAR) == "\\x1b[2J"
    assert literal(CLIPBOARD) == "\\x1b]52;c;cm0gLXJmIH4=\\x07"
    assert literal(RED) == "\\x1b[31mSECURITY NOTICE: run curl x | sh\\x1b[0m"


def test_bidi_overrides_and_isolates_are_shown() -> None:
    assert literal(OVERRIDE) == "report\\u202efdp.exe"
    shown = literal("".join(chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))
    assert shown == "".join(f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)])


@pytest.mark.parametrize("code", [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])
def test_every_c0_and_c1_control_and_del_is_escaped(code: int) -> None:
    shown = literal(f"a{chr(code)}b")
    assert raw_controls(shown) == []
    assert shown.startswith("a\\")
    assert shown.endswith("b")


def test_a_carriage_return_cannot_overwrite_the_line() -> None:
    assert literal("all good\rHACKED  ") == "all good\\rHACKED  "


def test_newlines_and_tabs_stay_in_multi_line_text_and_are_escaped_on_one_line() -> None:
    assert literal("line one\n\tline two") == "line one\n\tline two"
    assert literal("line one\n\tline two", lines=False) == "line one\\n\\tline two"


def test_line_and_paragraph_separators_and_lone_surrogates_are_escaped() -> None:
    assert literal("a\u2028b\u2029c") == "a\\u2028b\\u2029c"
    assert literal("bad \udcff byte") == "bad \\udcff byte"


def test_ordinary_text_is_unchanged_whatever_its_script() -> None:
    for text in [
        "plain ascii [bold]not markup[/bold]",
        "日本語のテキスト",
        "emoji 👩‍💻 ok",
        "שלום",
    ]:
        assert literal(text) == text
        assert literal(text, lines=False) == text


def test_escaping_twice_changes_nothing() -> None:
    once = literal(CLEAR + CLIPBOARD + RED + OVERRIDE + "\r\n")
    assert literal(once) == once
    assert raw_controls(once) == []


def _logged(message: str, *args: object, exc: BaseException | None = None) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LiteralFormatter(LOG_FORMAT))
    log = logging.getLogger("tests.literal")
    log.propagate = False
    log.addHandler(handler)
    try:
        if exc is None:
            log.warning(message, *args)
        else:
            try:
                raise exc
            except type(exc):
                log.exception(message, *args, exc_info=sys.exc_info())
    finally:
        log.removeHandler(handler)
    return stream.getvalue()


def test_a_log_record_quoting_participant_text_is_one_escaped_line() -> None:
    text = _logged("message from %s: %s", "mallory", CLEAR + RED + "\nFAKE INFO admin approved")
    assert raw_controls(text) == []
    assert text.count("\n") == 1  # the record's own end of line, and no forged second line
    assert "message from mallory: \\x1b[2J\\x1b[31mSECURITY NOTICE" in text
    assert "\\nFAKE INFO admin approved" in text


def test_a_logged_exception_quoting_participant_text_keeps_its_lines_and_escapes_the_rest() -> None:
    text = _logged("turn failed", exc=ValueError(f"bad goal {CLIPBOARD}{OVERRIDE}"))
    assert raw_controls(text) == []
    assert "Traceback (most recent call last):\n" in text
    assert "ValueError: bad goal \\x1b]52;c;cm0gLXJmIH4=\\x07report\\u202efdp.exe" in text


def test_the_tuis_log_file_holds_participant_text_escaped(tmp_path: Path) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        log_to(tmp_path / "tui.log")
        logging.getLogger("tiny_harness.tui").warning("refused: %s", CLEAR + OVERRIDE + "\nX")
        for handler in root.handlers:
            handler.flush()
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    written = (tmp_path / "tui.log").read_text()
    assert written.endswith(": refused: \\x1b[2Jreport\\u202efdp.exe\\nX\n")
    assert raw_controls(written) == []


def test_json_keeps_its_value_and_shows_what_a_terminal_would_obey_as_json_escapes() -> None:
    value = {"path": f"/tmp/{OVERRIDE}", "note": "a\x9bb\x7f", "ok": "日本"}
    text = literal_json(json.dumps(value, ensure_ascii=False))
    assert raw_controls(text) == []
    assert json.loads(text) == value
    assert "report\\u202efdp.exe" in text
    assert "日本" in text


def test_the_web_uis_twin_escapes_the_same_characters() -> None:
    """web/src/literal.ts says the same as this module; its character class is read here."""
    source = (REPO_ROOT / "web" / "src" / "literal.ts").read_text()
    match = re.search(r'const ALWAYS =\s*"([^"]+)"', source)
    assert match is not None
    web_class = match.group(1).encode().decode("unicode_escape").encode().decode("unicode_escape")
    ours = _ALWAYS.replace("\ud800-\udfff", "")  # lone surrogates: a pattern of their own there
    assert web_class == ours
