"""Tool-call approvals in the web UI, in Debian's Chromium against a real gateway, operator and
control plane, the scripted model asking for a gated call of the test MCP server (declared as
a HarnessToolServer whose ``spec.approval`` gates ``weather`` and allows edits): bob, watching,
sees the call wait for someone else, its buttons disabled with the operator's reason; alice
finds the task marked for her in the list, sees the call's arguments, who decides and until
when, finds a broken edit refused on the page before anything is sent, approves the call with
a reason, and sees the operator's answer and the task go on; the tool ran once (the MCP
server's count). Alice also rejects a call with a reason (the model is told who rejected it
and why; the tool never ran), approves one with arguments she edited on the page (the tool ran
with hers), and, under a policy with a two-second timeout, watches a call no one decides be
rejected by its timeout and the task go on (the tool never ran). Every screen passes axe-core
in both themes and is photographed in both (``docs/screens/web/``).

Known (the operator's, not the page's): a timeout's decision is written as the status message
under a new ``status-...`` id while its history entry is ``approval-timeout-<call id>``, so the
page, folding both, shows the harness's line twice; a decider's decision shares one id
(``cmd-<message id>``) and shows once."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Browser
from tests.browser.test_web_ui import log, state, title
from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.gateway_support import Replicas
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tiny_harness.testing.mcp_server import McpServerThread

pytestmark = pytest.mark.controlplane

GOAL: Final = "Plan the trip to Oslo"
REPLY: Final = "It is sunny in Oslo: pack light."


ONE_CALL: Final = {
    "type": "tool_calls",
    "calls": [{"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_oslo"}],
}
#: The timeout of the timed policy, in seconds.
TIMEOUT: Final = 2


def gate(
    operator: Callable[..., OperatorProcess],
    kubectl: Kubectl,
    mcp: McpServerThread,
    **policy: Any,
) -> McpServerThread:
    """The operator, and the test MCP server as tool server ``weather`` whose ``weather``
    tool needs approval (``policy``: more of its ``spec.approval``)."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={"tools": ["weather"], **policy})
    wait_ready(kubectl, "weather")
    return mcp


@pytest.fixture
def gated(
    operator: Callable[..., OperatorProcess], kubectl: Kubectl, mcp: McpServerThread
) -> McpServerThread:
    """The ``weather`` tool needs approval, and may be approved with edited arguments."""
    return gate(operator, kubectl, mcp, allowEdit=True)


@pytest.fixture
def timed(
    operator: Callable[..., OperatorProcess], kubectl: Kubectl, mcp: McpServerThread
) -> McpServerThread:
    """The ``weather`` tool needs approval within :data:`TIMEOUT` seconds (then rejected)."""
    return gate(operator, kubectl, mcp, timeoutSeconds=TIMEOUT)


async def parked(tasks: Tasks) -> None:
    """Task ``trip`` (alice its assignee, bob watching), parked on the model's call."""
    await tasks.create(
        "trip",
        goal=GOAL,
        toolServers=["weather"],
        participants=[{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    )
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("trip", "What should I pack?")
    await tasks.wait(
        "trip", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-approval", turn=1, within=60
    )


def calls(page: Page) -> Any:
    return page.get_by_role("region", name="Calls waiting for approval")


def the_call(page: Page) -> Any:
    return page.get_by_role("article", name=re.compile(r"weather__weather call call_oslo"))


def listed(page: Page) -> Any:
    return page.get_by_role("navigation", name="Your tasks").get_by_role(
        "link", name=re.compile(GOAL)
    )


async def test_alice_approves_a_pending_call_and_the_task_goes_on_the_tool_run_once(
    browser: Browser,
    tasks: Tasks,
    model_server: ModelServer,
    gated: McpServerThread,
    gateway: Replicas,
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [
                    {"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_oslo"}
                ],
            },
            {"type": "text", "text": REPLY},
        ]
    )
    await tasks.create(
        "trip",
        goal=GOAL,
        toolServers=["weather"],
        participants=[{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    )
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("trip", "What should I pack?")
    await tasks.wait(
        "trip", "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-approval", turn=1, within=60
    )
    replica = gateway()

    # Bob watches: the call waits for someone else; its buttons say why they are disabled.
    watcher = await browser.page(replica, query="?task=trip")
    await browser.sign_in(watcher, "bob")
    await expect(listed(watcher)).to_contain_text("awaits approval")
    await expect(the_call(watcher)).to_contain_text(
        "Not yours to decide: bob is a watcher and may not decide call 'call_oslo'"
    )
    await expect(
        the_call(watcher).get_by_role("button", name="Approve", exact=True)
    ).to_be_disabled()
    await expect(the_call(watcher).get_by_role("button", name="Reject")).to_be_disabled()
    await browser.check(watcher, "approval-watcher")

    # Alice: the list marks the task for her; its page shows the call.
    page = await browser.page(replica)
    await browser.sign_in(page, "alice")
    await expect(listed(page)).to_contain_text("approval for you")
    await expect(listed(page)).to_contain_text("awaiting-approval")
    await listed(page).click()
    await expect(title(page)).to_have_text(GOAL)
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-approval"))
    await expect(calls(page)).to_contain_text("1 call waits for approval, 1 for you.")
    call = the_call(page)
    await expect(call).to_contain_text("for you")
    arguments = call.get_by_role("region", name="Arguments of call call_oslo")
    await expect(arguments).to_have_text('{\n  "city": "Oslo"\n}')
    await expect(call).to_contain_text("Decided byassignees or admins")
    await expect(call.locator("time")).to_have_attribute("datetime", re.compile(r"^2\d{3}-"))
    await expect(call).to_contain_text("then rejected")
    await expect(call).to_contain_text("HarnessToolServer weather")
    await browser.check(page, "approval-pending")

    # A broken edit is refused on the page, nothing sent.
    await call.get_by_role("button", name="Edit the arguments").click()
    edit = call.get_by_label("Arguments (a JSON object)")
    await expect(edit).to_have_value('{\n  "city": "Oslo"\n}')
    await edit.fill('{"city": ')
    await call.get_by_role("button", name="Approve with these arguments").click()
    await expect(call.get_by_role("alert")).to_contain_text("The arguments are not JSON")
    await expect(edit).to_have_attribute("aria-invalid", "true")
    await expect(edit).to_be_focused()
    await browser.check(page, "approval-edit-refused")
    assert (await tasks.status("trip"))["approvals"][0].get("decision") is None
    await call.get_by_role("button", name="Edit the arguments").click()  # closed: as asked

    # Approved with a reason: the operator's answer, then the task goes on.
    await call.get_by_label("Reason (optional)").fill("fine")
    await call.get_by_role("button", name="Approve", exact=True).click()
    answer = log(page).locator(".line.decision")
    await expect(answer.locator(".text")).to_have_text(
        "weather__weather was approved by alice: fine"
    )
    await expect(answer.locator(".who")).to_have_text("harness")
    await expect(log(page).locator(".line.user .text")).to_have_text(
        ["What should I pack?", "approve call_oslo: fine"]
    )
    await expect(log(page)).to_contain_text(REPLY)
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await expect(calls(page)).to_be_hidden()
    await expect(listed(page)).not_to_contain_text("approval")
    await browser.check(page, "approval-approved")

    # The watcher's open page follows it too.
    await expect(log(watcher)).to_contain_text(REPLY)
    await expect(calls(watcher)).to_be_hidden()
    assert [c.arguments for c in gated.served("weather")] == [{"city": "Oslo"}]


async def test_alice_rejects_a_call_with_a_reason_and_the_model_is_told_the_tool_never_ran(
    browser: Browser,
    tasks: Tasks,
    model_server: ModelServer,
    gated: McpServerThread,
    gateway: Replicas,
) -> None:
    reply = "Not checked, then: pack for rain."
    await model_server.control.script([ONE_CALL, {"type": "text", "text": reply}])
    await parked(tasks)

    page = await browser.page(gateway(), query="?task=trip")
    await browser.sign_in(page, "alice")
    call = the_call(page)
    await expect(call).to_contain_text("for you")
    await call.get_by_label("Reason (optional)").fill("no network calls today")
    await call.get_by_role("button", name="Reject").click()

    answer = log(page).locator(".line.decision")
    rejected = "weather__weather was rejected by alice: no network calls today"
    await expect(answer.locator(".text")).to_have_text(rejected)
    await expect(answer.locator(".who")).to_have_text("harness")
    await expect(log(page).locator(".line.user .text")).to_have_text(
        ["What should I pack?", "reject call_oslo: no network calls today"]
    )
    await expect(log(page)).to_contain_text(reply)
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await expect(calls(page)).to_be_hidden()
    await expect(listed(page)).not_to_contain_text("approval")
    await browser.check(page, "approval-rejected")

    assert gated.served("weather") == []
    assert tool_outputs((await model_server.control.requests())[-1]) == [f"Not run: {rejected}."]


async def test_alice_approves_a_call_with_edited_arguments_and_it_runs_with_hers(
    browser: Browser,
    tasks: Tasks,
    model_server: ModelServer,
    gated: McpServerThread,
    gateway: Replicas,
) -> None:
    reply = "Sunny in Bergen: pack light."
    await model_server.control.script([ONE_CALL, {"type": "text", "text": reply}])
    await parked(tasks)

    page = await browser.page(gateway(), query="?task=trip")
    await browser.sign_in(page, "alice")
    call = the_call(page)
    await expect(call).to_contain_text("for you")
    toggle = call.get_by_role("button", name="Edit the arguments")
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    edit = call.get_by_label("Arguments (a JSON object)")
    await expect(edit).to_have_value('{\n  "city": "Oslo"\n}')
    await edit.fill('{\n  "city": "Bergen"\n}')
    await call.get_by_label("Reason (optional)").fill("Bergen instead")
    await expect(edit).to_have_attribute("aria-invalid", "false")
    await browser.check(page, "approval-edit")
    await call.get_by_role("button", name="Approve with these arguments").click()

    answer = log(page).locator(".line.decision")
    approved = "weather__weather was approved by alice with edited arguments: Bergen instead"
    await expect(answer.locator(".text")).to_have_text(approved)
    await expect(answer.locator(".who")).to_have_text("harness")
    await expect(log(page).locator(".line.user .text")).to_have_text(
        ["What should I pack?", "approve call_oslo: Bergen instead"]
    )
    await expect(log(page)).to_contain_text(reply)
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await expect(calls(page)).to_be_hidden()

    assert [c.arguments for c in gated.served("weather")] == [{"city": "Bergen"}]
    assert tool_outputs((await model_server.control.requests())[-1]) == ["Sunny in Bergen."]


async def test_a_call_no_one_decides_is_rejected_by_its_timeout_and_the_task_goes_on(
    browser: Browser,
    tasks: Tasks,
    model_server: ModelServer,
    timed: McpServerThread,
    gateway: Replicas,
) -> None:
    reply = "I could not check the weather: pack for anything."
    # The model takes a while over the next turn: the decided call stays listed meanwhile.
    await model_server.control.script(
        [ONE_CALL, {"type": "text", "text": reply, "delay_seconds": 5}]
    )
    await tasks.create(
        "trip",
        goal=GOAL,
        toolServers=["weather"],
        participants=[{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    )
    await tasks.wait("trip", "TASK_STATE_INPUT_REQUIRED")

    # Alice has the task open when the call parks, and no one decides it.
    page = await browser.page(gateway(), query="?task=trip")
    await browser.sign_in(page, "alice")
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await tasks.send("trip", "What should I pack?")

    why = f"not decided within {TIMEOUT}s (onTimeout: reject)"
    call = the_call(page)
    await expect(call.locator(".decided")).to_have_text(f"rejected: no one decided in time: {why}")
    await expect(call).not_to_contain_text("for you")
    await expect(call.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    await expect(call.get_by_role("button", name="Reject")).to_have_count(0)
    decided = page.get_by_role("region", name="Calls decided")
    await expect(decided).to_contain_text("The next turn runs what was approved.")
    timed_out = f"weather__weather was rejected: no one decided in time: {why}"
    # The operator's line, as the harness's. (Shown twice today: the timeout's status message
    # and its history entry have different ids; see the module's note.)
    answer = log(page).locator(".line.decision").filter(has_text=timed_out).first
    await expect(answer.locator(".text")).to_have_text(timed_out)
    await expect(answer.locator(".who")).to_have_text("harness")
    await expect(listed(page)).not_to_contain_text("approval")
    await browser.check(page, "approval-timed-out")

    # The task goes on: the model is told, and answers.
    await expect(log(page)).to_contain_text(reply)
    await expect(state(page)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-next-message"))
    await expect(calls(page)).to_be_hidden()

    assert timed.served("weather") == []
    assert tool_outputs((await model_server.control.requests())[-1]) == [f"Not run: {timed_out}."]
