"""A question an agent puts to a person (a participant task) in the web UI, in Debian's
Chromium against a real gateway, operator and control plane, with the scripted model: a
watcher sees whom it asks and that only that person's answer completes it, and what they type
anyway is refused, the task still waiting; the person finds it in their list marked as theirs,
answers in the composer, and sees it COMPLETED with their answer, its controls disabled, as
the watcher's page does too. Every screen passes axe-core in both themes and is photographed in
both (``docs/screens/web/``)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.async_api import expect

from tests.browser.conftest import Browser
from tests.browser.test_web_ui import cancel, complete, composer, log, say, state, title
from tests.conftest import ModelServer, OperatorProcess
from tests.integration.gateway_support import Replicas
from tests.integration.lifecycle_support import Tasks
from tests.integration.question_support import QUESTION, carol_is_asked

pytestmark = pytest.mark.controlplane

REFUSAL = "refused: this task waits for carol's answer; a message from alice does not answer it"


async def test_a_question_for_carol_is_refused_to_a_watcher_and_her_answer_completes_it(
    browser: Browser,
    gateway: Replicas,
    operator: Callable[..., OperatorProcess],
    model_server: ModelServer,
    tasks: Tasks,
) -> None:
    child = await carol_is_asked(model_server, operator, tasks)
    replica = gateway()

    # Alice watches it: the list and the page say whom it asks and that only carol answers.
    watcher = await browser.page(replica, query=f"?task={child}")
    await browser.sign_in(watcher, "alice")
    await expect(title(watcher)).to_have_text(QUESTION)
    listed = watcher.get_by_role("navigation", name="Your tasks").get_by_role(
        "link", name=re.compile(re.escape(QUESTION))
    )
    await expect(listed).to_contain_text("asks carol")
    panel = watcher.get_by_role("region", name="Question for carol")
    await expect(panel).to_contain_text(
        "This task waits for carol's answer: only theirs completes it, and a message from you "
        "does not answer it."
    )
    await expect(state(watcher)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-answer"))
    await expect(watcher.locator("#composer-hint")).to_contain_text(
        "Only carol's answer completes this task: a message from you is refused."
    )
    await browser.check(watcher, "question-watcher")

    # She answers anyway: the harness refuses it, saying why, and the task waits on.
    await say(watcher, "I approve it myself.")
    refusal = log(watcher).locator(".line.refusal")
    await expect(refusal.locator(".text")).to_have_text(REFUSAL)
    await expect(refusal.locator(".who")).to_have_text("harness")
    await expect(log(watcher).locator(".line.user .text")).to_have_text(["I approve it myself."])
    await expect(state(watcher)).to_have_text(re.compile(r"INPUT_REQUIRED.*awaiting-answer"))
    await expect(panel).to_contain_text("This task waits for carol's answer")
    await browser.check(watcher, "question-watcher-refused")
    assert (await tasks.status(child))["turn"] == 0  # no turn took her words

    # Carol: the question is in her list, marked for her; she opens it and answers it.
    person = await browser.page(replica)
    await browser.sign_in(person, "carol")
    mine = person.get_by_role("navigation", name="Your tasks").get_by_role(
        "link", name=re.compile(re.escape(QUESTION))
    )
    await expect(mine).to_contain_text("question for you")
    await expect(mine).to_contain_text("awaiting-answer")
    await browser.check(person, "question-for-you-listed")
    await mine.click()
    await expect(title(person)).to_have_text(QUESTION)
    panel = person.get_by_role("region", name="Question for you")
    await expect(panel).to_have_text(
        "Question for you" + "Your answer completes this task: write it below and send it."
    )
    answer = person.get_by_role("combobox", name="Your answer")
    await expect(answer).to_be_enabled()
    await expect(answer).to_have_attribute("placeholder", "Write your answer")
    # Alice's refused words are hers, not carol's.
    await expect(log(person).locator(".line.user .who")).to_have_text(["alice"])
    await browser.check(person, "question-for-you")

    await answer.fill("Approved, up to 40k.")
    await person.get_by_role("button", name="Send answer").click()
    await expect(state(person)).to_have_text("state COMPLETED")
    await expect(panel).to_contain_text("answered by carol: Approved, up to 40k.")
    await expect(log(person)).to_contain_text("Approved, up to 40k.")
    await expect(complete(person)).to_be_disabled()
    await expect(cancel(person)).to_be_disabled()
    await expect(composer(person)).to_be_disabled()
    await expect(person.get_by_text("the task has ended (COMPLETED)")).to_be_visible()
    await expect(mine).to_contain_text("COMPLETED")
    await browser.check(person, "question-answered")

    # The watcher's page, still open, follows it to the end.
    await expect(state(watcher)).to_have_text("state COMPLETED")
    await expect(watcher.get_by_role("region", name="Question for carol")).to_contain_text(
        "answered by carol: Approved, up to 40k."
    )
    await expect(complete(watcher)).to_be_disabled()
    await expect(composer(watcher)).to_be_disabled()
    # And the parent's model read the answer.
    parent = await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=2)
    assert parent["message"] == "Carol approved."
