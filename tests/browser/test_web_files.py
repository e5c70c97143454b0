"""Files in and artifacts out in the web UI, in Debian's Chromium against a real gateway, operator
and control plane, with the scripted model.

Alice opens her task and attaches files with the composer's file input: a file too large is
refused on the page, saying why, and nothing is sent; a small PNG, a text file and an archive
are listed (name, type, size, a remove button; the archive said to be kept but not read by the
model) and the first two sent with her question. A send the gateway refuses anyway (a file
grown past its bound on the way) shows the gateway's words, and the text and files come back to
the composer. Sent, the files show in the conversation (the image as a small preview) and
reach the scripted model as the provider's image and text inputs (its recorded request). The
model publishes three artifacts, a text, a JSON object and a PNG: the page shows them as they
stream in, every read of the task refused meanwhile (the text as text, the JSON
pretty-printed, the image inline), and again from GetTask after a reload; each downloads
through the page's link as the bytes published.

Bob creates a task from the new-task form with a PNG attached: the form refuses a file too large
in the composer's words, lists the PNG, and when the gateway refuses the first message anyway
keeps the goal and the file with the gateway's words; created, the task's page shows the image
under the first message, and the scripted model's request holds it. Every screen passes axe-core
in both themes and is photographed in both (``docs/screens/web/``)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from playwright.async_api import Page, Request, Route, expect

from tests.browser.conftest import Browser, Harness
from tests.browser.test_web_ui import composer, log, title
from tests.conftest import ModelServer, OperatorProcess
from tests.files_support import png, publish
from tests.integration.gateway_support import Replicas
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.sizes import FILE_BYTES

pytestmark = pytest.mark.controlplane

GOAL: Final = "Chart the quarter"
QUESTION: Final = "What does this chart show?"
REPLY: Final = "Published the summary, the figures and the chart."
NOTES: Final = "Quarter notes\n- sales up 12%\n- costs flat\n"
#: Markup in a text artifact: the page must show it as text, never as HTML.
SUMMARY: Final = "Sales rose 12% in the quarter.\n<b>Costs</b> stayed flat."
FIGURES: Final = {"quarter": "Q3", "sales": [120, 134, 150], "currency": "EUR"}


def gradient(width: int, height: int) -> bytes:
    """A real PNG (an RGB gradient), as a browser would render it."""
    return png(width, height, lambda x, y: bytes((x * 255 // width, y * 255 // height, 160)))


CHART: Final = gradient(48, 32)
#: What the model publishes: a different picture from the one alice sends.
PUBLISHED: Final = gradient(160, 96)


SCRIPT: Final = [
    publish("summary", [{"text": SUMMARY}], "c0", description="What the chart says"),
    publish("figures", [{"data": FIGURES}], "c1", description="The numbers behind it"),
    publish(
        "chart",
        [
            {
                "file": {
                    "name": "quarter.png",
                    "media_type": "image/png",
                    "bytes": base64.b64encode(PUBLISHED).decode(),
                }
            }
        ],
        "c2",
        description="The quarter, redrawn",
    ),
    {"type": "text", "text": REPLY},
]


def attach(page: Page) -> Any:
    return page.get_by_label("Attach files")


def to_send(page: Page) -> Any:
    return page.get_by_role("list", name="Files to send")


def problem(page: Page) -> Any:
    return page.locator("#composer-problem")


def artifacts(page: Page) -> Any:
    return page.get_by_role("region", name="Artifacts")


def artifact(page: Page, name: str) -> Any:
    return artifacts(page).get_by_role("article", name=name, exact=True)


def size(n: int) -> str:
    """A size as the page says it (web/src/attachments.ts size)."""
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f}".removesuffix(".0") + " KiB"


def file(name: str, mime: str, content: bytes) -> dict[str, Any]:
    return {"name": name, "mimeType": mime, "buffer": content}


def user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The last user message's content in a recorded Responses request."""
    users = [i for i in body["input"] if isinstance(i, dict) and i.get("role") == "user"]
    content = users[-1]["content"]
    assert isinstance(content, list)
    return content


async def downloaded(page: Page, link: Any) -> tuple[str, bytes]:
    """What the browser saves from ``link``: its file name and bytes."""
    async with page.expect_download() as info:
        await link.click()
    download = await info.value
    path = await download.path()
    return download.suggested_filename, await asyncio.to_thread(Path(path).read_bytes)


async def test_files_attached_in_the_composer_reach_the_model_and_its_artifacts_show_and_download(
    browser: Browser,
    tasks: Tasks,
    model_server: ModelServer,
    operator: Callable[..., OperatorProcess],
    gateway: Replicas,
) -> None:
    await model_server.control.script(SCRIPT)
    operator()
    await tasks.create("charts", goal=GOAL, participants=[{"id": "alice", "role": "assignee"}])
    await tasks.wait("charts", "TASK_STATE_INPUT_REQUIRED")
    replica = gateway()
    page = await browser.page(replica, query="?task=charts")
    await browser.sign_in(page, "alice")
    await expect(title(page)).to_have_text(GOAL)
    await expect(log(page)).to_contain_text("No message yet")
    asked = len(await model_server.control.requests())

    # The file input is reached by keyboard, right after the message field.
    await composer(page).focus()
    await composer(page).press("Tab")
    await expect(attach(page)).to_be_focused()
    # The input itself is visually hidden: its label, drawn as a button, shows the focus ring.
    ring = await page.locator("label[for=composer-files]").evaluate(
        "e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth"
    )
    assert ring == "solid 3px", ring

    # Refused on the page: a file past the bound; nothing is listed, nothing can be sent.
    too_large = b"\x89PNG\r\n\x1a\n" + bytes(200 * 1024)
    await attach(page).set_input_files(file("huge.png", "image/png", too_large))
    await expect(page.get_by_role("alert")).to_have_text(
        "huge.png is too large to send: 200 KiB, and a file may be at most 192 KiB (it travels "
        "as base64, a third larger, in a message of at most 256 KiB). Send a smaller file."
    )
    assert FILE_BYTES == 192 * 1024  # the figure the page gives is the gateway's
    await expect(to_send(page)).to_be_hidden()
    await expect(page.get_by_role("button", name="Send", exact=True)).to_be_disabled()
    await browser.check(page, "files-refused")

    # Chosen: listed with type and size; a kind no model reads is said so; one removed again.
    await composer(page).fill(QUESTION)
    await attach(page).set_input_files(
        [
            file("chart.png", "image/png", CHART),
            file("notes.txt", "text/plain", NOTES.encode()),
            file("old.zip", "application/zip", b"PK\x05\x06" + bytes(18)),
        ]
    )
    await expect(problem(page)).to_be_hidden()
    listed = to_send(page).get_by_role("listitem")
    await expect(listed).to_have_count(3)
    await expect(listed.nth(0)).to_contain_text(f"chart.pngimage/png · {size(len(CHART))}")
    await expect(listed.nth(0)).not_to_contain_text("Not read by the model")
    await expect(listed.nth(2)).to_contain_text(
        "old.zipapplication/zip · 22 BNot read by the model: kept with the task, and the model "
        "told only its name."
    )
    await browser.check(page, "files-attached")
    await to_send(page).get_by_role("button", name="Remove old.zip").click()
    await expect(listed).to_have_count(2)
    await expect(attach(page)).to_be_focused()

    # The gateway refuses a send anyway (here a file grown past its bound on the way, as a
    # gateway with another bound would): its words are shown, the text and files come back,
    # nothing is written.
    notes = base64.b64encode(NOTES.encode()).decode()
    grown = base64.b64encode(b"x" * 200 * 1024).decode()

    async def grow(route: Route, request: Request) -> None:
        body = request.post_data or ""
        if request.method == "POST" and "SendStreamingMessage" in body:
            # Fetched here and answered to the page: the refusal is the whole response.
            body = body.replace(f'"raw":"{notes}"', f'"raw":"{grown}"')
            await route.fulfill(response=await route.fetch(post_data=body))
        else:
            await route.continue_()

    await page.route("**/*", grow)
    await composer(page).press("Enter")
    await expect(problem(page)).to_have_text(
        re.compile(r"^message\.parts\[2\]: the file notes\.txt is 200 KiB; .* at most 192 KiB")
    )
    await expect(listed).to_have_count(2)
    await expect(composer(page)).to_have_value(QUESTION)
    await expect(log(page).locator(".line.user")).to_have_count(0)
    await browser.check(page, "files-refused-by-the-gateway")
    await page.unroute("**/*", grow)

    # From here until the reload, every GetTask fails: what the page shows of the artifacts
    # can come only from the streams' artifact updates.
    reads: list[str] = []

    async def no_reads(route: Route, request: Request) -> None:
        if request.method == "POST" and '"method":"GetTask"' in (request.post_data or ""):
            reads.append(request.url)
            await route.abort()
        else:
            await route.continue_()

    await page.route("**/*", no_reads)

    # Sent: the files show under the question, the image as a small preview.
    await page.get_by_role("button", name="Send", exact=True).click()
    sent = log(page).locator(".line.user")
    await expect(sent.locator(".text")).to_have_text(QUESTION)
    attached = sent.get_by_role("list", name="Attached files").get_by_role("listitem")
    await expect(attached).to_have_count(2)
    await expect(attached.nth(0)).to_contain_text(f"chart.pngimage/png · {size(len(CHART))}")
    await expect(attached.nth(1)).to_contain_text(f"notes.txttext/plain · {size(len(NOTES))}")
    preview = attached.nth(0).get_by_role("img", name="Preview of chart.png")
    await expect(preview).to_have_attribute(
        "src", "data:image/png;base64," + base64.b64encode(CHART).decode()
    )
    await expect(to_send(page)).to_be_hidden()

    # The model's artifacts stream in (no read of the task succeeds meanwhile): text as text,
    # JSON pretty-printed, the image inline.
    await expect(log(page)).to_contain_text(REPLY)
    await browser.check(page, "files-sent")
    await show_artifacts(page)
    await browser.check(page, "artifacts")

    assert reads, "the page read the task while the test refused it"
    await page.unroute("**/*", no_reads)

    # The model read the files as the provider's image and text inputs.
    requests = await model_server.control.requests()
    assert len(requests) > asked
    with_files = [
        r
        for r in requests
        if isinstance(r.body, dict)
        and any(c.get("type") == "input_image" for c in user_content(r.body))
    ]
    assert with_files, "no model request carried the image"
    content = user_content(with_files[0].body)
    assert {
        "type": "input_image",
        "image_url": "data:image/png;base64," + base64.b64encode(CHART).decode(),
        "detail": "auto",
    } in content
    assert {
        "type": "input_text",
        "text": "Contents of notes.txt (text/plain):\n" + NOTES,
    } in content
    assert QUESTION in json.dumps(content)

    # Each downloads through its link as what was published.
    name, got = await downloaded(
        page, artifact(page, "chart").get_by_role("link", name=re.compile("^Download chart"))
    )
    assert (name, got) == ("quarter.png", PUBLISHED)
    name, got = await downloaded(
        page, artifact(page, "figures").get_by_role("link", name=re.compile("^Download figures"))
    )
    assert name == "figures.json"
    assert json.loads(got) == FIGURES
    assert got.decode() == json.dumps(json.loads(got), indent=2) + "\n"  # pretty, as kubectl
    name, got = await downloaded(
        page, artifact(page, "summary").get_by_role("link", name=re.compile("^Download summary"))
    )
    assert (name, got.decode()) == ("summary.txt", SUMMARY)

    # Read again from GetTask: the same artifacts, and the sent files with their preview.
    await page.reload()
    await expect(title(page)).to_have_text(GOAL)
    await show_artifacts(page)
    await expect(
        log(page).locator(".line.user").get_by_role("img", name="Preview of chart.png")
    ).to_be_visible()
    assert browser.errors.get(page) == []


NEW_GOAL: Final = "Say what this picture shows"
NEW_REPLY: Final = "A gradient, blue to pink."
PICTURE: Final = gradient(24, 24)
TOO_LARGE: Final = (
    "huge.png is too large to send: 200 KiB, and a file may be at most 192 KiB (it travels "
    "as base64, a third larger, in a message of at most 256 KiB). Send a smaller file."
)


async def test_a_new_task_created_with_a_png_attached_gives_the_model_the_image(
    browser: Browser, harness: Harness, model_server: ModelServer
) -> None:
    replica = await harness(NEW_REPLY)
    page = await browser.page(replica, query="?new")
    await browser.sign_in(page, "bob")
    goal = page.get_by_label("Goal")
    await goal.fill(NEW_GOAL)
    create = page.get_by_role("button", name="Create task")

    # The file input is reached by keyboard right after the goal, the first message's text.
    await goal.press("Tab")
    await expect(attach(page)).to_be_focused()
    ring = await page.locator("label.file-label").evaluate(
        "e => getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth"
    )
    assert ring == "solid 3px", ring

    # Refused in the form, in the composer's words: nothing is listed.
    too_large = b"\x89PNG\r\n\x1a\n" + bytes(200 * 1024)
    await attach(page).set_input_files(file("huge.png", "image/png", too_large))
    await expect(page.get_by_role("alert")).to_have_text(TOO_LARGE)
    await expect(to_send(page)).to_be_hidden()

    # Chosen: listed with its type and size, the refusal gone.
    await attach(page).set_input_files(file("picture.png", "image/png", PICTURE))
    await expect(page.get_by_role("alert")).to_have_count(0)
    listed = to_send(page).get_by_role("listitem")
    await expect(listed).to_have_count(1)
    await expect(listed.nth(0)).to_contain_text(f"picture.pngimage/png · {size(len(PICTURE))}")
    await browser.check(page, "new-task-files")

    # The gateway refuses the first message anyway (the file grown on the way): its words are
    # shown, and the form keeps the goal and the file; no task is made.
    picture = base64.b64encode(PICTURE).decode()
    grown = base64.b64encode(b"x" * 200 * 1024).decode()

    async def grow(route: Route, request: Request) -> None:
        body = request.post_data or ""
        if request.method == "POST" and "SendStreamingMessage" in body:
            body = body.replace(f'"raw":"{picture}"', f'"raw":"{grown}"')
            await route.fulfill(response=await route.fetch(post_data=body))
        else:
            await route.continue_()

    await page.route("**/*", grow)
    await create.click()
    await expect(page.get_by_role("alert")).to_have_text(
        re.compile(r"^message\.parts\[1\]: the file picture\.png is 200 KiB; .* at most 192 KiB")
    )
    await expect(goal).to_have_value(NEW_GOAL)
    await expect(listed).to_have_count(1)
    await expect(page).to_have_url(re.compile(r"\?new$"))
    await expect(create).to_be_enabled()
    await browser.check(page, "new-task-files-refused-by-the-gateway")
    await page.unroute("**/*", grow)

    # Created: the task's page shows the picture under the first message.
    await create.click()
    await expect(title(page)).to_have_text(NEW_GOAL)
    first = log(page).locator(".line.user").first
    await expect(first.locator(".text")).to_have_text(NEW_GOAL)
    attached = first.get_by_role("list", name="Attached files").get_by_role("listitem")
    await expect(attached).to_have_count(1)
    await expect(attached.nth(0)).to_contain_text(f"picture.pngimage/png · {size(len(PICTURE))}")
    preview = attached.nth(0).get_by_role("img", name="Preview of picture.png")
    await expect(preview).to_have_attribute("src", "data:image/png;base64," + picture)
    await expect(log(page)).to_contain_text(NEW_REPLY)
    await browser.check(page, "new-task-files-sent")

    # The model was given the picture as the provider's image input, with the goal.
    requests = await model_server.control.requests()
    with_image = [
        r
        for r in requests
        if isinstance(r.body, dict)
        and any(c.get("type") == "input_image" for c in user_content(r.body))
    ]
    assert with_image, "no model request carried the image"
    content = user_content(with_image[0].body)
    assert {
        "type": "input_image",
        "image_url": "data:image/png;base64," + picture,
        "detail": "auto",
    } in content
    assert NEW_GOAL in json.dumps(content)
    assert browser.errors.get(page) == []


async def show_artifacts(page: Page) -> None:
    """The three artifacts as the page should show them."""
    await expect(artifacts(page).get_by_role("article")).to_have_count(3)
    summary = artifact(page, "summary")
    await expect(summary).to_contain_text("What the chart says")
    text = summary.get_by_role("region", name="Text of summary")
    await expect(text).to_have_text(SUMMARY)
    await expect(text.locator("b")).to_have_count(0)  # text, never markup
    figures = artifact(page, "figures")
    pretty = figures.get_by_role("region", name="JSON of figures")
    await expect(pretty).to_contain_text('"sales": [\n    120,\n    134,\n    150\n  ]')
    shown = await pretty.inner_text()
    # The gateway carries the object as a protobuf Struct, which keeps no key order.
    assert json.loads(shown) == FIGURES
    assert shown == json.dumps(json.loads(shown), indent=2)
    chart = artifact(page, "chart")
    await expect(chart).to_contain_text(size(len(PUBLISHED)))
    image = chart.get_by_role("img", name="quarter.png, an image of chart")
    await expect(image).to_have_attribute(
        "src", "data:image/png;base64," + base64.b64encode(PUBLISHED).decode()
    )
    await expect(image).to_have_js_property("naturalWidth", 160)
    await artifacts(page).scroll_into_view_if_needed()
