"""Free-form JSON a participant or a model can store, parsed with a depth and a size.

Python's JSON decoder and encoder recurse: past about a thousand levels of nesting they raise
``RecursionError``. The API server accepts far deeper objects (its own limit is 10,000
levels), and the Kubernetes client, kopf and aiohttp decode a whole listing or watch line at
once, so one object nested too deep would make every read of its namespace fail, for every
reader. So free-form data (a message's data parts, its metadata, a decision's arguments, a
model's tool arguments) is kept within :data:`MAX_DEPTH` levels and :data:`MAX_CHARS`
characters of JSON, and every such value is parsed or checked here, by one parser whose cost
is linear in its input and which refuses before ``json.loads`` could ever recurse:

- :func:`loads` scans the text's brackets outside strings first (no recursion, no decoding),
  and decodes only text within both bounds;
- :func:`check` measures a value already decoded (a dict from an A2A message) the same way,
  with an explicit stack;
- :func:`dumps` is the compact text a value is stored as;
- :func:`loads_document` decodes a whole answer of the API (a listing, a watch line), in which
  one object stored before these bounds (or by a route they do not cover) may nest too deep:
  that value alone is cut, and the object's reader skips it.

A value past a bound raises :class:`JsonTooDeepError` or :class:`JsonTooLargeError` (both
``ValueError``), which say the bound and what to do; neither quotes the value.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Final

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from tiny_harness.core.errors import HarnessError

#: The deepest a free-form value may nest (``{}`` is one level, ``{"a": []}`` two). Far
#: below the ~1,000 levels at which Python's decoder gives up, so a stored value with a few
#: levels of envelope around it (a journal entry, a listing) still decodes everywhere.
MAX_DEPTH: Final = 64
#: The longest JSON text of one free-form value: a message's bound (``sizes.MESSAGE_BYTES``).
MAX_CHARS: Final = 256 * 1024
#: The longest arguments a model's tool call may have, as text: a publish of a whole chunk
#: (``sizes.ARTIFACT_CHUNK_BYTES``, refused past that with its own reason) with room to spare.
ARGUMENTS_CHARS: Final = 4 * MAX_CHARS

#: How deep a whole document from the API (a listing, an object, a watch line) is read before
#: a value below is cut (:func:`loads_document`): free-form data's bound and the levels of the
#: listing, object and journal entry around it, with room to spare, and far below the ~1,000
#: levels at which Python's decoder gives up.
DOCUMENT_DEPTH: Final = 4 * MAX_DEPTH
#: What a value nested past :data:`DOCUMENT_DEPTH` reads as in a document. It only replaces
#: a value far deeper than any model's bound, so the object's reader refuses the value around
#: it (:data:`StoredObject`: nested too deep) and skips the object.
TOO_DEEP: Final = "\u0000nested too deep to read"

# A JSON string, with its escapes (the unrolled form: linear, no backtracking).
_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# A string or a bracket: the tokens that decide how deep a place in a text is.
_TOKENS: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
# What is left of the structure once strings are gone.
_NOT_BRACKETS: Final = re.compile(r"[^\[\]{}]+")


class JsonBoundError(HarnessError, ValueError):
    """A free-form JSON value past a bound; nothing was parsed, stored or sent."""


class JsonTooDeepError(JsonBoundError):
    """The value nests deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(
            f"the JSON is nested more than {limit} levels deep, and free-form data may nest "
            f"at most {limit} levels: flatten it, or send it as text"
        )
        self.depth = depth
        self.limit = limit


class JsonTooLargeError(JsonBoundError):
    """The value's JSON text is longer than :data:`MAX_CHARS` characters."""

    def __init__(self, chars: int, limit: int) -> None:
        super().__init__(
            f"the JSON is {chars} characters long, and free-form data may be at most {limit} "
            "characters: send less of it, or split it into several messages"
        )
        self.chars = chars
        self.limit = limit


def depth_of(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep ``text``'s brackets nest outside strings, counting no further than
    ``limit + 1`` (enough to refuse). Linear in the text; brackets inside strings, escaped
    quotes included, are not counted. A malformed text is measured as it stands (an unclosed
    string's brackets count), so it is never measured shallower than a decoder would nest."""
    brackets = _NOT_BRACKETS.sub("", _STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        else:
            depth -= 1
    return deepest


def loads(text: str, *, max_depth: int = MAX_DEPTH, max_chars: int = MAX_CHARS) -> Any:
    """``text`` decoded, when it is within both bounds: :class:`JsonTooLargeError` past
    ``max_chars``, :class:`JsonTooDeepError` past ``max_depth`` (both before any decoding),
    and ``json.JSONDecodeError`` (a ValueError) when it is not JSON."""
    if len(text) > max_chars:
        raise JsonTooLargeError(len(text), max_chars)
    depth = depth_of(text, max_depth)
    if depth > max_depth:
        raise JsonTooDeepError(depth, max_depth)
    return json.loads(text)


def loads_document(text: str | bytes, *, max_depth: int = DOCUMENT_DEPTH) -> Any:
    """A document from the API decoded whole, however deep one of its objects nests: what the
    decoder cannot take (it raises ``RecursionError`` at about a thousand levels) is decoded
    again with every value nested past ``max_depth`` replaced by :data:`TOO_DEEP`, so one
    object too deep costs itself (its reader's model refuses it, and the reader skips and
    flags it), never the listing or the watch it came in. A document within the decoder's
    reach is decoded as it is, at no cost beyond ``json.loads``."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    kept: list[str] = []
    depth = 0
    cut = last = -1
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char[0] == '"':
            continue
        if char in "[{":
            depth += 1
            if depth == max_depth + 1:
                cut = token.start()
        else:
            if depth == max_depth + 1:
                kept.append(text[last + 1 : cut])
                kept.append(json.dumps(TOO_DEEP))
                last = token.end() - 1
            depth -= 1
    kept.append(text[last + 1 :])
    try:
        return json.loads("".join(kept))
    except RecursionError:  # a bracket never closed: there was no end to cut at
        raise ValueError("the document nests too deep to read, and is not whole") from None


def check(value: Any, *, max_depth: int = MAX_DEPTH, max_chars: int = MAX_CHARS) -> None:
    """Refuse a decoded ``value`` past either bound, as :func:`loads` refuses its text: the
    depth is measured with a stack of its own (never recursing), then the size of its text."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if level > max_depth:
            raise JsonTooDeepError(level, max_depth)
        stack.extend((child, level + 1) for child in children)
    chars = len(dumps(value))
    if chars > max_chars:
        raise JsonTooLargeError(chars, max_chars)


def dumps(value: Any) -> str:
    """The compact JSON text a free-form value is stored as (call :func:`check` first for a
    value not known to be within the bounds: the encoder recurses too)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _object(value: Any) -> Any:
    """A stored free-form object back as a dict: from its JSON text (the stored form) or as a
    dict (an older object, or one built in memory), within the bounds either way."""
    if isinstance(value, str):
        try:
            value = loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON text ({exc}): it must hold a JSON object") from None
        if not isinstance(value, dict):
            raise ValueError("the JSON text must hold a JSON object")
    elif isinstance(value, dict):
        check(value)
    else:
        return value
    return _whole_numbers(value)


def _whole_numbers(value: Any) -> Any:
    """``value`` with every whole number as an integer (``2.0`` as ``2``), as the API server
    kept it when it stored the object itself: an A2A data part arrives as protobuf's Struct,
    which holds every number as a double, and JSON has one kind of number. Recursive, as only
    a value within :data:`MAX_DEPTH` reaches it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


#: A free-form JSON object as the harness keeps it: a dict in the model, stored in the API as
#: its JSON text (``maxLength`` :data:`MAX_CHARS`), so the API server sees no nesting and no
#: listing can carry a value too deep to decode. Read from either form through :func:`loads`
#: or :func:`check` (an object stored before the text form is read as it was, one too deep is
#: refused); written (``model_dump(mode="json")``) as text by :func:`dumps`.
StoredObject = Annotated[
    dict[str, Any],
    BeforeValidator(_object),
    PlainSerializer(dumps, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "maxLength": MAX_CHARS,
            "description": f"JSON text of an object, at most {MAX_DEPTH} levels deep.",
            # The API server takes only text, and still reads back an object stored before
            # (it would otherwise prune that object to {} on every read).
            "x-kubernetes-preserve-unknown-fields": True,
        }
    ),
]
