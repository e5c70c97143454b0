"""The map does not drift from the code: every name the docs and the docstrings write exists, and
every module is on the map.

A rename that forgets its docs leaves a reader at a name that is nowhere; a module nobody names
is one a newcomer cannot find. The names are read from the text (``tests/names_refs.py``) and
looked up in an index of the package built from its source (``tests/names_index.py``), so
nothing is imported and the check stays fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.names_index import PACKAGE, ROOT
from tests.names_refs import (
    DOCS,
    MAP,
    Names,
    Reference,
    documents,
    linked,
    markdown_references,
    problems,
    source_references,
)


@pytest.fixture(scope="module")
def names() -> Names:
    return Names()


def _report(found: list[str], what: str) -> None:
    """Fail with one line per finding, each saying where and what to do (no repr of the list)."""
    if found:
        pytest.fail(f"{len(found)} {what}:\n  " + "\n  ".join(found), pytrace=False)


def test_every_name_the_docs_write_exists(names: Names) -> None:
    refs = [ref for doc in documents() for ref in markdown_references(names, doc)]
    _report(problems(names, refs), "names in the docs that name nothing")


def test_every_name_a_docstring_writes_exists(names: Names) -> None:
    refs = [
        ref for module in sorted(names.index.modules) for ref in source_references(names, module)
    ]
    _report(problems(names, refs), "names in docstrings and comments that name nothing")


def test_every_module_is_on_the_map(names: Names) -> None:
    """Two hops: the map (``docs/design/README.md``) names every module, or links the page that
    does."""
    pages = [MAP, *linked(MAP)]
    named = {
        module
        for page in pages
        if page.exists()
        for ref in markdown_references(names, page)
        for module in names.modules_named(ref)
    }
    missing = sorted(set(names.index.modules) - named - {PACKAGE})
    _report(
        [
            f"{name}: name it in {MAP.relative_to(ROOT)}, in the part it belongs to"
            for name in missing
        ],
        "modules no reader of the map can find",
    )


def test_every_page_of_the_docs_is_within_two_links_of_the_map() -> None:
    first = set(linked(MAP))
    second = {page for doc in first if doc.exists() for page in linked(doc)}
    pages = {page.resolve() for page in DOCS.rglob("*.md")} - {MAP.resolve()}
    missing = sorted(str(page.relative_to(ROOT)) for page in pages - first - second)
    _report(missing, "pages of docs/ the map does not reach in two links")


# --- the check itself: it finds drift, and takes no prose for a name ------------------------------


def _written(names: Names, tmp_path: Path, text: str) -> list[str]:
    doc = tmp_path / "page.md"
    doc.write_text(text, encoding="utf-8")
    return [ref.text for ref in markdown_references(names, doc) if names.problem(ref)]


def test_a_name_that_is_gone_is_found_with_where_it_is_written(
    names: Names, tmp_path: Path
) -> None:
    text = (
        "The loop is `core/loop.py`; the stream was `KubeTaskEventStream` in `stream.py`.\n"
        "```\n`core/in_a_fence.py`\n```\n"
        "Gone: `core/nowhere.py`, `kube.client.NoSuchClient`, `operator/worker.py::no_such_name`,\n"
        "`test_nothing_is_called_this`, `operator.no_such_setting`, `networkPolicy.noSuchValue`,\n"
        "[a page](no-such-page.md).\n"
    )
    assert _written(names, tmp_path, text) == [
        "core/nowhere.py",
        "kube.client.NoSuchClient",
        "operator/worker.py::no_such_name",
        "test_nothing_is_called_this",
        "operator.no_such_setting",
        "networkPolicy.noSuchValue",
        "no-such-page.md",
    ]
    gone = Reference(tmp_path / "page.md", 3, "core/nowhere.py", "file")
    assert problems(names, [gone]) == [
        f"{tmp_path / 'page.md'}:3: `core/nowhere.py`: no such file: write the path it has now, "
        "or drop it"
    ]


def test_names_that_exist_resolve_in_every_form_the_docs_use(names: Names, tmp_path: Path) -> None:
    text = (
        "`core/loop.py`, `tiny_harness/kube/`, `kube/watching`,\n"
        "`kube/client.py::BoundedApiClient`,\n"
        "`core/tracing.TracedAdapter`, `tiny_harness.kube.watching.follow_listings`,\n"
        "`status_writer.write`, `TaskView.version`, `operator.cache_bytes`,\n"
        "`[operator.destinations]`, `networkPolicy.enabled`, `tiny_harness.turn.resumed`,\n"
        "`test_the_model_cannot_put_the_conversation_before_a_stranger`, [map](README.md).\n"
    )
    (tmp_path / "README.md").write_text("", encoding="utf-8")
    assert _written(names, tmp_path, text) == []


def test_prose_is_not_taken_for_a_name(names: Names, tmp_path: Path) -> None:
    text = (
        "`HarnessTask`, `spec.parts`, `status.runner`, `figures.json`, `/model <x>`,\n"
        "`anthropic/_data/models.py`, `asyncio.Condition.notify_all`, `tools/call`,\n"
        "`spawn_subtask(agent=...)`, `.../sender`, [a site](https://example.com/x.md).\n"
    )
    doc = tmp_path / "page.md"
    doc.write_text(text, encoding="utf-8")
    assert list(markdown_references(names, doc)) == []


def test_a_role_resolves_as_its_module_sees_it(names: Names) -> None:
    module = f"{PACKAGE}.a2a_gateway.store"
    path = ROOT / PACKAGE / "a2a_gateway" / "store.py"

    def role(target: str) -> bool:
        return names.problem(Reference(path, 1, target, "role", module=module)) is None

    assert role(".reply_ids.fate_of")  # the end of a name, as Sphinx reads a leading dot
    assert role("KubeTaskStore.whole")  # a class of the module, and its method
    assert role("~tiny_harness.core.reply_ids.fate_of")
    assert role("VersionedTaskStore")  # imported from a2a-sdk
    assert not role(".reply_ids.answered")  # no such function in reply_ids.py
    assert not role("~tiny_harness.a2a_gateway.stream.KubeTaskEventStream")
