// The calls a task waits to have approved, as the page lists them: yours first, who decides and
// why you may not (the operator's words), the list's badge, the arguments shown bounded, the
// edit checked as a JSON object, the envelope sent, and the operator's answer found.
import { Role, TaskState, type AgentCard, type Message, type StreamResponse } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { describe, expect, it } from "vitest";
import {
  answerTo,
  approvalBadge,
  callsOf,
  decidedText,
  decisionEnvelope,
  describeDeciders,
  parseEdit,
  refusalOf,
  shownArguments,
  summary,
  unseenRefusal,
  viewCalls,
} from "./approval";
import { HarnessClient } from "./client";
import { extensionOf, pendingApproval } from "./extension";
import { emptyView, takeMessage, takeStatus, takeTask } from "./fold";
import { awaiting, message, pendingCall, said, status } from "./test/a2a";
import { EVENT_MEDIA_TYPE } from "./wire";

const decided = { verdict: "approve", by: "alice", at: "2026-12-02T05:30:00Z", reason: "fine" };
const carols = pendingCall("c0", "Paris", {
  requirement: { deciders: [{ roles: [], participants: ["carol"] }], allow_edit: false, sources: [] },
});

function call(raw: Record<string, unknown>) {
  return pendingApproval(raw)!;
}

describe("the calls waiting for approval", () => {
  it("lists yours first, then those waiting for others, then those decided", () => {
    const task = awaiting([pendingCall("c1", "Oslo", { decision: decided }), carols, pendingCall("c2", "Rome")]);
    const calls = callsOf(extensionOf(task.metadata), "alice");
    expect(calls.map((c) => [c.pending.callId, c.mine])).toEqual([
      ["c2", true],
      ["c0", false],
      ["c1", false],
    ]);
    expect(calls[1]!.refusal).toBe("alice may not decide call 'c0' (weather__weather); it is decided by carol");
    expect(summary(calls)).toBe("2 calls wait for approval, 1 for you");
    expect(approvalBadge(calls, "awaiting-approval")).toBe("approval for you");
  });

  it("tells a watcher and a stranger why not, in the operator's words", () => {
    const task = awaiting([pendingCall("c1", "Oslo")]);
    const [watched] = callsOf(extensionOf(task.metadata), "bob");
    expect(watched!.refusal).toBe("bob is a watcher and may not decide call 'c1'");
    expect(approvalBadge(callsOf(extensionOf(task.metadata), "bob"), "awaiting-approval")).toBe("awaits approval");
    expect(refusalOf(watched!.pending, "mallory", null)).toBe("mallory is not a participant of this task");
    expect(summary(callsOf(extensionOf(task.metadata), "bob"))).toBe("1 call waits for approval");
  });

  it("says who decides, and what was decided", () => {
    const both = call(
      pendingCall("c1", "Oslo", {
        requirement: {
          deciders: [
            { roles: ["assignee", "admin"], participants: [] },
            { roles: [], participants: ["carol"] },
          ],
        },
      }),
    );
    expect(describeDeciders(call(pendingCall("c1", "Oslo")).requirement)).toBe("assignees or admins");
    expect(describeDeciders(both.requirement)).toBe("(assignees or admins) and (carol)");
    expect(decidedText(call(pendingCall("c1", "Oslo", { decision: decided })))).toBe("approved by alice: fine");
    const edited = { ...decided, reason: "", arguments: { city: "Bergen" } };
    expect(decidedText(call(pendingCall("c1", "Oslo", { decision: edited })))).toBe(
      "approved by alice with edited arguments",
    );
    const late = { verdict: "reject", by: "timeout", at: "x", reason: "not decided within 2s" };
    expect(decidedText(call(pendingCall("c1", "Oslo", { decision: late })))).toBe(
      "rejected: no one decided in time: not decided within 2s",
    );
    expect(refusalOf(call(pendingCall("c1", "Oslo", { decision: late })), "alice", "assignee")).toBe(
      "call 'c1' was already rejected by its timeout",
    );
  });

  it("marks nothing once every call is decided, and the sub-state alone before the calls are read", () => {
    const task = awaiting([pendingCall("c1", "Oslo", { decision: decided })]);
    expect(approvalBadge(callsOf(extensionOf(task.metadata), "alice"), "awaiting-approval")).toBeNull();
    expect(approvalBadge([], "awaiting-approval")).toBe("awaits approval");
    expect(approvalBadge([], "awaiting-next-message")).toBeNull();
  });

  it("shows the arguments whole, however long, and says when the harness cut them", () => {
    expect(shownArguments(call(pendingCall("c1", "Oslo")))).toEqual({ text: '{\n  "city": "Oslo"\n}', cut: false });
    const city = "x".repeat(20_000) + "END";
    const long = shownArguments(call(pendingCall("c1", city)));
    expect(long.text).toBe(JSON.stringify({ city }, null, 2));
    expect(long.text.endsWith('END"\n}')).toBe(true);
    const cut = call(pendingCall("c1", "", { arguments: { _start: '{"text": "xxx' }, arguments_cut: true }));
    expect(shownArguments(cut)).toEqual({ text: '{"text": "xxx', cut: true });
  });

  it("does not approve a call it cannot show whole, and says where to read it; a rejection stays", () => {
    expect(unseenRefusal(call(pendingCall("c1", "Oslo")), "trip")).toBeNull();
    const cut = call(pendingCall("c1", "", { arguments: { _start: '{"text": "xxx' }, arguments_cut: true }));
    expect(unseenRefusal(cut, "trip")).toBe(
      'the arguments of call c1 are too long to show here whole, so this page does not approve it: read them ' +
        'with "kubectl harness get trip", which shows them whole, and approve there ("kubectl harness approve ' +
        'trip c1"), or reject it here',
    );
  });

  it("names the park the call waits in, as the task shows it", () => {
    const parked = call(pendingCall("c1", "Oslo", { park: "1-0a1b2c3d" }));
    expect(parked.park).toBe("1-0a1b2c3d");
    expect(decisionEnvelope(parked.callId, parked.park, "approve", "")).toEqual({
      kind: "control",
      action: "approve",
      call_id: "c1",
      park: "1-0a1b2c3d",
    });
  });

  it("takes an edit only as a JSON object, and one equal to the call's as no edit", () => {
    const pending = call(pendingCall("c1", "Oslo", { requirement: { deciders: [{ roles: ["assignee"] }], allow_edit: true } }));
    expect(pendingApproval(pendingCall("c1", "Oslo"))!.requirement.allowEdit).toBe(false);
    expect(pending.requirement.allowEdit).toBe(true);
    expect(parseEdit('{ "city": "Bergen" }', pending)).toEqual({ ok: true, value: { city: "Bergen" } });
    expect(parseEdit('{"city":"Oslo"}', pending)).toEqual({ ok: true, value: null });
    expect(parseEdit('{"city": ', pending)).toMatchObject({ ok: false, error: expect.stringMatching(/^The arguments are not JSON: /) });
    expect(parseEdit('["Bergen"]', pending)).toEqual({ ok: false, error: "The arguments must be a JSON object, { … }." });
    expect(parseEdit("null", pending).ok).toBe(false);
  });

  it("sends the control envelope: the call, the verdict, a reason, an approval's edit", async () => {
    expect(decisionEnvelope("c1", "", "reject", "  ")).toEqual({ kind: "control", action: "reject", call_id: "c1" });
    expect(decisionEnvelope("c1", "1-ab", "approve", "fine", { city: "Bergen" })).toEqual({
      kind: "control",
      action: "approve",
      call_id: "c1",
      park: "1-ab",
      reason: "fine",
      arguments: { city: "Bergen" },
    });
    const sent: Message[] = [];
    const a2a = {
      async *sendMessageStream(params: { message: Message }): AsyncGenerator<StreamResponse> {
        sent.push(params.message);
      },
    } as unknown as Client;
    const client = HarnessClient.over(a2a, { capabilities: { extensions: [] } } as unknown as AgentCard, "alice");
    const { message: decision, events } = client.decide("t1", "c1", "1-ab", "approve", "fine");
    for await (const _ of events) void _;
    expect(sent).toEqual([decision]);
    expect(takeMessage(emptyView("t1", "alice"), decision).lines).toEqual([
      { messageId: decision.messageId, kind: "user", who: "you", text: "approve c1: fine", files: [] },
    ]);
    expect(decision.role).toBe(Role.ROLE_USER);
    expect(decision.parts).toEqual([
      {
        content: { $case: "data", value: { kind: "control", action: "approve", call_id: "c1", park: "1-ab", reason: "fine" } },
        metadata: undefined,
        filename: "",
        mediaType: EVENT_MEDIA_TYPE,
      },
    ]);
  });

  it("finds the operator's answer to a decision, or its refusal, as the harness's line", () => {
    let view = takeTask(emptyView("t1", "alice"), awaiting([pendingCall("c1", "Oslo")]), 0);
    const reply = message("cmd-d1", "weather__weather was approved by alice: fine");
    view = takeStatus(view, status(TaskState.TASK_STATE_INPUT_REQUIRED, { message: reply }), 0);
    view = takeStatus(view, status(TaskState.TASK_STATE_INPUT_REQUIRED, { message: message("refused-d2", "refused: no call 'c9' waits") }), 0);
    view = takeStatus(view, status(TaskState.TASK_STATE_INPUT_REQUIRED, { message: message("cmd-d3", "state: INPUT_REQUIRED") }), 0);
    expect(answerTo(view, "d1")).toMatchObject({ kind: "decision", who: "agent", text: reply.parts[0]!.content!.value });
    expect(answerTo(view, "d2")).toMatchObject({ kind: "refusal" });
    expect(answerTo(view, "d3")).toMatchObject({ kind: "command" });
    expect(answerTo(view, "d4")).toBeNull();
    expect(viewCalls(view).map((c) => c.pending.callId)).toEqual(["c1"]);
  });

  it("shows no empty line for a decision as the history holds it, and its answer recorded as the harness's", () => {
    const task = awaiting([pendingCall("c1", "Oslo")]);
    task.history = [
      said("m1", "Weather?"),
      said("d1", ""),
      message("cmd-d1", "weather__weather was rejected by carol", Role.ROLE_AGENT, { approval: { call_id: "c1" } }),
    ];
    const view = takeTask(emptyView("t1", "alice"), task, 0);
    expect(view.lines.map((l) => [l.kind, l.text])).toEqual([
      ["user", "Weather?"],
      ["decision", "weather__weather was rejected by carol"],
    ]);
  });
});
