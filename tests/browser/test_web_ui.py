"""The web UI in Debian's Chromium against a real gateway, operator and control plane, with the
scripted model: the seed's five flows (a reply parks the task; `/` lists the commands;
`/sub-task` adds a row; open the sub-task and come back; Complete leaves both controls
disabled), a watcher's page, a refused command, a message too large, too many requests, a
stream that reconnects after the gateway restarts, two tabs on one task, one column below
820 px, every control reached by keyboard with its focus visible, and token-review sign-in.
Every screen passes axe-core in both themes and is photographed in both
(``docs/screens/web/``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, Route, expect

from tests.browser.conftest import Browser, Harness
from tests.integration.gateway_support import Replicas, Users, kubectl, task_id_of
from tiny_harness.core.extensions import COMMANDS_EXT_URI

pytestmark = pytest.mark.controlplane


def state(page: Page) -> Any:
    return page.get_by_role("status", name="Task state")


def log(page: Page) -> Any:
    return page.get_by_role("log", name="Messages")


def composer(page: Page) -> Any:
    return page.get_by_role("combobox", name="Message")


def details(page: Page) -> Any:
    return page.get_by_role("complementary", name="Task details")


def title(page: Page) -> Any:
    return page.get_by_role("main").get_by_role("heading", level=1)


def complete(page: Page) -> Any:
    return page.get_by_role("button", name="Complete", exact=True)


def cancel(page: Page) -> Any:
    return page.get_by_role("button", name="Cancel task")


async def say(page: Page, text: str) -> None:
    await composer(page).fill(text)
    await composer(page).press("Enter")


def card_commands(url: str) -> list[str]:
    """The commands the card lists, as the listbox should show them: /name argument-hint."""
    card = httpx.get(f"{url}/.well-known/agent-card.json").json()
    extension = next(e for e in card["capabilities"]["extensions"] if e["uri"] == COMMANDS_EXT_URI)
    listed = extension["params"]["commands"]
    return [f"/{c['name']} {c.get('argument_hint', '')}".strip() for c in listed]


async def test_a_new_user_creates_a_task_talks_to_it_opens_a_sub_task_and_completes_it(
    browser: Browser, harness: Harness
) -> None:
    replica = await harness("Happy to plan it.", "Two weeks.")
    page = await browser.page(replica)

    await expect(page.get_by_role("heading", name="Sign in to tiny-harness")).to_be_visible()
    await browser.check(page, "sign-in")
    await browser.sign_in(page, "alice")
    await expect(page.get_by_text("You take part in no task yet.")).to_be_visible()
    await browser.check(page, "welcome")

    # New task: goal, criteria, and a watcher.
    await page.get_by_role("link", name="New task", exact=True).click()
    await page.get_by_label("Goal").fill("Plan the release")
    await page.get_by_label("Acceptance criteria").fill("Dates agreed\nChangelog drafted")
    await page.get_by_role("button", name="Add a participant").click()
    await page.get_by_label("Participant 1", exact=True).fill("bob")
    await page.get_by_label("Role of participant 1").select_option("watcher")
    await browser.check(page, "new-task")
    await page.get_by_role("button", name="Create task").click()

    # 1. The reply parks the task awaiting the next message.
    await expect(log(page)).to_contain_text("Happy to plan it.")
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await expect(title(page)).to_have_text("Plan the release")
    parent = re.sub(r".*\?task=", "", page.url)
    await expect(details(page)).to_contain_text("Dates agreed")
    await expect(details(page).get_by_role("listitem").filter(has_text="bob")).to_contain_text(
        "watcher"
    )
    await browser.check(page, "1-a-reply-parks-the-task")
    await say(page, "How long will it take?")
    await expect(log(page)).to_contain_text("Two weeks.")

    # 2. Typing / lists the card's commands; Up/Down move, Escape closes, Tab takes one.
    await composer(page).fill("")
    await composer(page).press_sequentially("/")
    listbox = page.get_by_role("listbox", name="Commands")
    await expect(listbox.locator(".command-usage")).to_have_text(card_commands(replica.url))
    active = listbox.locator("[aria-selected=true]")
    await expect(active.locator(".command-usage")).to_have_text("/model [<model>]")
    await composer(page).press("ArrowDown")
    await expect(active.locator(".command-usage")).to_have_text("/effort [low|medium|high]")
    await expect(composer(page)).to_have_attribute("aria-expanded", "true")
    await browser.check(page, "2-slash-lists-the-commands")
    await composer(page).press("ArrowUp")
    await expect(active.locator(".command-usage")).to_have_text("/model [<model>]")
    await composer(page).press("Escape")
    await expect(listbox).to_be_hidden()
    await composer(page).fill("/sub")
    await expect(listbox.get_by_role("option")).to_have_count(1)
    await composer(page).press("Tab")
    await expect(composer(page)).to_have_value("/sub-task ")
    await expect(composer(page)).to_be_focused()

    # 3. /sub-task adds a row, a link to the sub-task.
    await composer(page).press_sequentially("Draft the changelog")
    await composer(page).press("Enter")
    await expect(log(page)).to_contain_text("Created sub-task")
    row = details(page).get_by_role("link", name=re.compile("Draft the changelog"))
    await expect(row).to_be_visible()
    await browser.check(page, "3-sub-task-adds-a-row")

    # 4. Open the sub-task (its own page, "← Parent"), complete it, and come back.
    await row.click()
    await expect(title(page)).to_have_text("Draft the changelog")
    await expect(page).to_have_url(re.compile(r"\?task=.+-sub-"))
    await expect(state(page)).to_contain_text("INPUT_REQUIRED")
    await browser.check(page, "4-the-sub-task-open")
    await complete(page).click()
    await expect(state(page)).to_contain_text("COMPLETED")
    await page.get_by_role("link", name="← Parent").click()
    await expect(title(page)).to_have_text("Plan the release")
    await expect(page).to_have_url(re.compile(re.escape(parent) + "$"))
    await expect(row).to_contain_text("COMPLETED")
    await browser.check(page, "4-back-at-the-parent")

    # 5. Complete: the task is COMPLETED and both controls stay, disabled.
    await complete(page).click()
    await expect(state(page)).to_have_text("state COMPLETED")
    await expect(complete(page)).to_be_disabled()
    await expect(cancel(page)).to_be_disabled()
    await expect(composer(page)).to_be_disabled()
    await expect(page.get_by_text("the task has ended (COMPLETED)")).to_be_visible()
    await browser.check(page, "5-completed-controls-disabled")

    # The list: a tree, filtered by state.
    tasks = page.get_by_role("navigation", name="Your tasks")
    await tasks.get_by_label("Show").select_option("TASK_STATE_COMPLETED")
    tree = tasks.get_by_role("list").first
    await expect(tree.get_by_role("link", name=re.compile("Plan the release"))).to_be_visible()
    await expect(
        tree.get_by_role("listitem").filter(has_text="Plan the release").get_by_role("list")
    ).to_contain_text("Draft the changelog")
    await browser.check(page, "tasks-filtered")


async def test_a_watcher_sees_the_controls_disabled_and_a_refused_command_says_why(
    browser: Browser, harness: Harness, users: Users
) -> None:
    replica = await harness("On it.", max_request_bytes=4096)
    alice = await users(replica.url, "alice")
    envelope = {
        "goal": "Tidy the docs",
        "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
        "plan": {
            "steps": [
                {"name": "Find broken links"},
                {"name": "Fix them", "dependencies": ["Find broken links"]},
            ]
        },
    }
    task_id = task_id_of(await alice.send("Tidy the docs", envelope=envelope))
    page = await browser.page(replica, query=f"?task={task_id}")
    await browser.sign_in(page, "bob")

    await expect(log(page)).to_contain_text("On it.")
    await expect(complete(page)).to_be_disabled()
    await expect(cancel(page)).to_be_disabled()
    await expect(page.get_by_text("a watcher cannot complete or cancel it")).to_be_visible()
    await expect(composer(page)).to_be_enabled()
    plan = details(page).get_by_role("region", name="Plan")
    await expect(plan).to_contain_text("0 of 2 steps done")
    await expect(plan.get_by_role("listitem")).to_have_text(
        ["○ Find broken links (to do)", "○ Fix them (to do) · after Find broken links"]
    )
    await browser.check(page, "watcher")

    await say(page, "/sub-task Sneak a sub-task in")
    refusal = log(page).locator(".line.refusal")
    await expect(refusal).to_contain_text("bob is a watcher")
    await expect(state(page)).to_contain_text("INPUT_REQUIRED")
    await expect(details(page)).to_contain_text("None.")  # no sub-task row
    await browser.check(page, "refused-command")

    # More than the gateway takes: said as what to do, and the text stays to be cut down.
    await say(page, "x" * 5000)
    await expect(page.get_by_role("alert").filter(has_text="too large")).to_have_text(
        "That message is too large for the gateway: send less at once, or split it."
    )
    await expect(composer(page)).to_have_value("x" * 5000)
    await expect(log(page).get_by_text("x" * 5000)).to_have_count(0)
    await browser.check(page, "message-too-large")


async def test_a_stream_reconnects_after_the_gateway_restarts_and_shows_nothing_twice(
    browser: Browser, harness: Harness
) -> None:
    replica = await harness("First.", "Second.")
    page = await browser.page(replica, query="?new")
    await browser.sign_in(page, "alice")
    await page.get_by_label("Goal").fill("Plan the release")
    await page.get_by_role("button", name="Create task").click()
    await expect(log(page)).to_contain_text("First.")

    replica.stop()
    banner = page.get_by_role("status").filter(has_text="Reconnecting")
    await expect(banner).to_contain_text("The gateway cannot be reached")
    await browser.check(page, "reconnecting")
    replica.restart()
    await expect(banner).to_be_hidden()

    await say(page, "And then?")
    await expect(log(page)).to_contain_text("Second.")
    await expect(log(page).get_by_text("First.", exact=True)).to_have_count(1)
    await expect(log(page).get_by_text("Plan the release", exact=True)).to_have_count(1)


async def test_a_task_open_in_two_tabs_updates_in_both(
    browser: Browser, harness: Harness, users: Users
) -> None:
    replica = await harness("Happy to plan it.", "Two weeks.")
    alice = await users(replica.url, "alice")
    task_id = task_id_of(await alice.send("Plan the release"))
    profile = await browser.context()
    one = await browser.page(replica, context=profile, query=f"?task={task_id}")
    await browser.sign_in(one, "alice")
    two = await browser.page(replica, context=profile, query=f"?task={task_id}")
    await expect(two.get_by_text("Signed in as alice")).to_be_visible()  # the same session
    for tab in (one, two):
        await expect(log(tab)).to_contain_text("Happy to plan it.")

    await say(one, "How long will it take?")
    for tab in (one, two):
        await expect(log(tab).locator(".line .text")).to_have_text(
            ["Plan the release", "Happy to plan it.", "How long will it take?", "Two weeks."]
        )
    await browser.check(two, "two-tabs-the-other-tab")

    await complete(two).click()
    for tab in (one, two):
        await expect(state(tab)).to_have_text("state COMPLETED")
        await expect(complete(tab)).to_be_disabled()
        await expect(cancel(tab)).to_be_disabled()
    await browser.check(one, "two-tabs-completed-in-the-other")


async def test_below_820_px_one_column_and_every_control_is_reached_by_keyboard_with_focus_shown(
    browser: Browser, harness: Harness, users: Users
) -> None:
    replica = await harness("Noted.")
    alice = await users(replica.url, "alice")
    task_id = task_id_of(await alice.send("Plan the release"))
    await alice.send("/sub-task Draft the changelog", task_id=task_id)
    narrow = {"width": 700, "height": 1000}
    page = await browser.page(replica, query=f"?task={task_id}", viewport=narrow)
    await browser.sign_in(page, "alice")
    await expect(details(page).get_by_role("link", name=re.compile("Draft"))).to_be_visible()

    nav = await page.get_by_role("navigation", name="Your tasks").bounding_box()
    main = await page.get_by_role("main").bounding_box()
    assert nav is not None
    assert main is not None
    assert nav["y"] + nav["height"] <= main["y"] + 1, "the task list is above the task"
    assert abs(nav["x"] - main["x"]) < 1, "the two are in one column"
    assert abs(nav["width"] - main["width"]) < 1, "the two are in one column"
    await browser.check(page, "one-column")

    # Tab from the top of the page through every control, each with a visible focus ring.
    await page.reload()
    await expect(details(page).get_by_role("link", name=re.compile("Draft"))).to_be_visible()
    reached: list[str] = []
    for _ in range(40):
        await page.keyboard.press("Tab")
        focused = await page.evaluate(
            """() => {
              const e = document.activeElement;
              const s = getComputedStyle(e);
              const name = e.getAttribute("aria-label") || e.labels?.[0]?.textContent
                || e.textContent || "";
              return { name: name.trim().replace(/\\s+/g, " "), tag: e.tagName,
                       outline: s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0 };
            }"""
        )
        if focused["tag"] == "BODY":
            break
        assert focused["outline"], f"no visible focus on {focused}"
        reached.append(focused["name"])
    for control in (
        "Skip to the main content",
        "tiny-harness",
        "New task",
        "Dark theme",
        "Sign out",
        "Show",
        "Complete",
        "Cancel task",
        "Message",
    ):
        assert any(name.startswith(control) for name in reached), f"{control} not in {reached}"
    assert any(name.startswith("Draft the changelog") for name in reached), reached
    # Enter on the focused sub-task link opens it.
    await details(page).get_by_role("link", name=re.compile("Draft")).focus()
    await page.keyboard.press("Enter")
    await expect(title(page)).to_have_text("Draft the changelog")
    await expect(page.get_by_role("link", name="← Parent")).to_be_visible()
    await browser.check(page, "one-column-sub-task")


async def test_in_token_review_mode_a_bad_token_is_refused_and_a_good_one_signs_in(
    browser: Browser, gateway: Replicas, kubeconfig: Path, namespace: str
) -> None:
    replica = gateway(participant_identity="tokenreview")
    page = await browser.page(replica)
    await page.get_by_label("Bearer token").fill("not-a-token")
    await page.get_by_role("button", name="Sign in").click()
    refused = page.get_by_role("alert").filter(has_text="does not know who you are")
    await expect(refused).to_contain_text("refused by Kubernetes")
    await expect(refused).to_contain_text("Sign in again")
    await browser.check(page, "sign-in-token-refused")

    kubectl(kubeconfig, "-n", namespace, "create", "serviceaccount", "alice")
    token = kubectl(kubeconfig, "-n", namespace, "create", "token", "alice").strip()
    await page.get_by_label("Bearer token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    account = f"system:serviceaccount:{namespace}:alice"
    await expect(page.get_by_text(f"Signed in as {account}")).to_be_visible()


async def test_past_the_rate_limit_the_page_says_to_wait_and_keeps_the_message(
    browser: Browser, harness: Harness, users: Users
) -> None:
    """The gateway's per-participant limit (429 with Retry-After) is said as how long to wait,
    and the refused text stays in the composer to be sent again; the task list reads itself
    again once the wait has passed."""
    limit = 12
    replica = await harness(*["Noted."] * limit, rate_limit_per_minute=limit)
    alice = await users(replica.url, "alice")
    task_id = task_id_of(await alice.send("Keep notes"))
    page = await browser.page(replica, query=f"?task={task_id}")
    await browser.sign_in(page, "alice")
    await expect(log(page)).to_contain_text("Noted.")

    # The task list's read refused once (the answer stands in for the gateway's): it says
    # when it reads again, and does.
    listing = page.get_by_role("navigation", name="Your tasks")
    refusals: list[str] = []

    async def refuse_the_first_listing(route: Route) -> None:
        body = route.request.post_data or ""
        if not refusals and ("ListTasks" in body or "tasks/list" in body):
            refusals.append(body)
            await route.fulfill(
                status=429,
                headers={"Retry-After": "1"},
                json={"error": {"code": 429, "message": "rate limit exceeded"}},
            )
        else:
            await route.continue_()

    await page.route(f"{replica.url}/**", refuse_the_first_listing)
    await page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    await expect(listing.get_by_role("alert")).to_have_text(
        "Too many requests: the list is read again in about 1 s."
    )
    await expect(listing.get_by_role("alert")).to_have_count(0)
    await expect(listing).to_contain_text("Keep notes")
    await page.unroute(f"{replica.url}/**")
    assert len(refusals) == 1

    refused = (
        page.get_by_role("form", name="Send a message")
        .get_by_role("alert")
        .filter(has_text="Too many requests")
    )
    sent = 0
    while await refused.count() == 0:
        assert sent <= limit, "the gateway never refused a request past its limit"
        sent += 1
        await say(page, f"Note {sent}")
        # Settled: answered, or refused (the button says "Sending…" until then).
        await expect(page.get_by_role("button", name="Sending…")).to_have_count(0)
    await expect(refused).to_have_text(
        re.compile(r"^Too many requests: wait about \d+ s, then send again\.$")
    )
    await expect(composer(page)).to_have_value(f"Note {sent}")
    await expect(log(page).get_by_text(f"Note {sent}", exact=True)).to_have_count(0)
    await browser.check(page, "rate-limited")
