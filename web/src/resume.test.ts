import { Role, TaskState, type AgentCard, type StreamResponse } from "@a2a-js/sdk";
import type { Client } from "@a2a-js/sdk/client";
import { describe, expect, it } from "vitest";
import { HarnessClient, type Followed } from "./client";
import { GatewayRefusal } from "./errors";
import { emptyView, take, type TaskView } from "./fold";
import type { ReasonCode } from "./reasons";
import { afterStream, isAfter, reconnectPause } from "./resume";
import { asEvent, message, status, task } from "./test/a2a";
import { TASK_EXT_KEY } from "./wire";

const { TASK_STATE_WORKING: WORKING, TASK_STATE_INPUT_REQUIRED: INPUT_REQUIRED } = TaskState;

/** An A2A error as the SDK decodes the gateway's over JSON-RPC: its reason, the gateway's
 * message, and the error's details (its data), whose ErrorInfo carries the gateway's code. */
function a2aError(reason: string, text: string, code?: ReasonCode): Error {
  const data = code
    ? [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "a2a-protocol.org", metadata: { reason: code } }]
    : undefined;
  return Object.assign(new Error(text), { reason, data });
}

const LIMIT =
  "alice has 1 streams open on this gateway, as many as a participant may " +
  "(gateway.max_streams_per_participant); close one, or read the task with GetTask";
const ENDED = "the task is in a terminal state (TASK_STATE_COMPLETED)";
const CUT =
  "the stream of task 't1' was ended: 64 changes waited unread (the client reads too slowly). " +
  "Subscribe again with the header Last-Event-ID: 41 to be sent what followed";

describe("versions", () => {
  it("orders versions as numbers, not as text, and every version is after none", () => {
    expect(isAfter("10", "9")).toBe(true);
    expect(isAfter("9", "10")).toBe(false);
    expect(isAfter("7", "7")).toBe(false);
    expect(isAfter("1", null)).toBe(true);
    expect(isAfter("18446744073709551615", "18446744073709551614")).toBe(true);
  });
});

describe("the pause before following again", () => {
  it("starts at half a second, doubles, and stops growing at five", () => {
    expect([1, 2, 3, 4, 5, 6, 60].map((n) => reconnectPause(n))).toEqual([500, 1000, 2000, 4000, 5000, 5000, 5000]);
  });

  it("is what the gateway asked for when it said, within the same bound", () => {
    expect(reconnectPause(1, 2)).toBe(2000);
    expect(reconnectPause(1, 30)).toBe(5000);
  });
});

describe("what the end of a stream means", () => {
  it("follows again when the stream ended cleanly or broke, the task going on", () => {
    expect(afterStream(null)).toMatchObject({ kind: "resume", retryAfter: null });
    expect(afterStream(new TypeError("network error"))).toMatchObject({ kind: "resume" });
    expect(afterStream(a2aError("INTERNAL_ERROR", "the gateway stopped"))).toMatchObject({ kind: "resume" });
  });

  it("follows again when the gateway cut a stream it found read too slowly, said plainly", () => {
    const cut = new Error("SSE event contained an error", {
      cause: a2aError("UNSUPPORTED_OPERATION", CUT, "stream_behind"),
    });
    const end = afterStream(cut);
    expect(end).toMatchObject({ kind: "resume" });
    expect(String((end as { why: unknown }).why)).toMatch(/read it too slowly/);
  });

  it("waits as asked when there were too many requests", () => {
    expect(afterStream(new GatewayRefusal(429, "rate limit exceeded", 3))).toMatchObject({ kind: "resume", retryAfter: 3 });
  });

  it("stops and says so when the participant's streams are at the gateway's limit", () => {
    const end = afterStream(a2aError("UNSUPPORTED_OPERATION", LIMIT, "too_many_streams"));
    expect(end).toEqual({ kind: "refused", why: `${LIMIT}.` });
    // HTTP+JSON says it with a 429, whose body carries the same code.
    expect(afterStream(new GatewayRefusal(429, LIMIT, null, "too_many_streams"))).toMatchObject({ kind: "refused" });
    // The SDK's HTTP+JSON errors keep the ErrorInfo's metadata as their own.
    const rest = Object.assign(new Error(LIMIT), { reason: "UNSUPPORTED_OPERATION", metadata: { reason: "too_many_streams" } });
    expect(afterStream(rest)).toEqual({ kind: "refused", why: `${LIMIT}.` });
  });

  it("decides nothing from a sentence without its code: the sentence may be reworded", () => {
    for (const text of [LIMIT, ENDED, CUT]) {
      const end = afterStream(a2aError("UNSUPPORTED_OPERATION", text));
      expect(end).toMatchObject({ kind: "resume", retryAfter: null });
      expect(String((end as { why: unknown }).why)).toContain(text);
    }
    // A 429 with the limit's words but no code is a rate limit: wait, then follow again.
    expect(afterStream(new GatewayRefusal(429, LIMIT, 2))).toMatchObject({ kind: "resume", retryAfter: 2 });
  });

  it("stops when the gateway does not take the credentials, or the task is not there", () => {
    expect(afterStream(new GatewayRefusal(401, "unknown participant"))).toMatchObject({ kind: "refused" });
    expect(afterStream(a2aError("TASK_NOT_FOUND", "task 't1' not found", "task_not_found"))).toMatchObject({ kind: "gone" });
  });

  it("stops quietly when the task has ended (the gateway follows no ended task)", () => {
    expect(afterStream(a2aError("UNSUPPORTED_OPERATION", ENDED, "task_ended"))).toEqual({ kind: "ended" });
  });
});

// -- the follow, over a scripted A2A client ------------------------------------------------------

/** A task event or a status event at ``version``. */
function at<T extends { metadata?: Record<string, unknown> | undefined }>(value: T, version: number): T {
  const metadata = value.metadata ?? {};
  const ext = (metadata[TASK_EXT_KEY] as Record<string, unknown> | undefined) ?? {};
  return { ...value, metadata: { ...metadata, [TASK_EXT_KEY]: { ...ext, version: String(version) } } };
}

function said(version: number, text: string): StreamResponse {
  return asEvent.status(at(status(INPUT_REQUIRED, { message: message(`r${version}`, text) }), version));
}

/** One stream: its events, then how it ends (null: cleanly). */
type Script = { events: StreamResponse[]; end: unknown };

function scripted(streams: Script[]) {
  const asked: (string | undefined)[] = [];
  const client = {
    async *resubscribeTask(_params: unknown, options?: { serviceParameters?: Record<string, string> }) {
      asked.push(options?.serviceParameters?.["Last-Event-ID"]);
      const stream = streams.shift();
      if (!stream) throw new Error("no more streams scripted");
      for (const event of stream.events) yield event;
      if (stream.end !== null) throw stream.end;
    },
  } as unknown as Client;
  const harness = HarnessClient.over(client, { capabilities: { extensions: [] } } as unknown as AgentCard, "alice");
  const pauses: number[] = [];
  harness.pause = async (ms) => {
    pauses.push(ms);
  };
  return { harness, asked, pauses };
}

/** Follow as the page does (each event folded into one view) until the follow ends. */
async function follow(harness: HarnessClient, start: TaskView): Promise<{ view: TaskView; seen: Followed[] }> {
  let view = start;
  const seen: Followed[] = [];
  for await (const item of harness.follow("t1", new AbortController().signal, () => view.version)) {
    seen.push(item);
    if (item.kind === "event") view = take(view, item.event, 0);
  }
  return { view, seen };
}

function texts(view: TaskView): string[] {
  return view.lines.map((l) => `${l.who}: ${l.text}`);
}

describe("following a task across streams that end", () => {
  it("resumes from the last version applied, skips what it has, and shows every message once, in order", async () => {
    const first = at(task({ history: [message("r1", "one")], status: message("r1", "one") }), 1);
    const { harness, asked, pauses } = scripted([
      // The first stream: the task, one change, then the network goes.
      { events: [asEvent.task(first), said(2, "two")], end: new TypeError("network error") },
      // Still unreachable.
      { events: [], end: new TypeError("Failed to fetch") },
      // Another replica sends what was missed (three, four), a replay of four, then ends
      // the stream at its lifetime.
      { events: [said(3, "three"), said(4, "four"), said(4, "four")], end: null },
      // Nothing missed: the task as the page has it, at the same version; then news; then
      // the participant's streams are at the limit.
      {
        events: [asEvent.task(at(first, 4)), said(5, "five")],
        end: a2aError("UNSUPPORTED_OPERATION", LIMIT, "too_many_streams"),
      },
    ]);
    const { view, seen } = await follow(harness, emptyView("t1", "alice"));

    expect(texts(view)).toEqual(["agent: one", "agent: two", "agent: three", "agent: four", "agent: five"]);
    expect(view.version).toBe("5");
    expect(asked).toEqual([undefined, "2", "2", "4"]);
    // Growing while nothing arrives, from half a second again after an event.
    expect(pauses).toEqual([500, 1000, 500]);
    expect(seen.at(-1)).toEqual({ kind: "refused", why: `${LIMIT}.` });
  });

  it("ends with the error when the task is not there, and quietly when it has ended", async () => {
    const gone = scripted([{ events: [], end: a2aError("TASK_NOT_FOUND", "task 't1' not found", "task_not_found") }]);
    await expect(follow(gone.harness, emptyView("t1", "alice"))).rejects.toMatchObject({ reason: "TASK_NOT_FOUND" });

    const ended = scripted([
      { events: [], end: a2aError("UNSUPPORTED_OPERATION", "the task is in a terminal state (TASK_STATE_CANCELED)", "task_ended") },
    ]);
    const { seen } = await follow(ended.harness, emptyView("t1", "alice"));
    expect(seen).toEqual([]);
    expect(ended.pauses).toEqual([]);
  });
});

describe("the fold, by version", () => {
  it("skips a status event that is not after the last version applied", () => {
    let view = take(emptyView("t1", "alice"), asEvent.task(at(task({ state: WORKING }), 7)), 0);
    view = take(view, asEvent.status(at(status(INPUT_REQUIRED, { subState: "awaiting-next-message" }), 9)), 0);
    const before = view;
    view = take(view, asEvent.status(at(status(WORKING), 8)), 0);
    view = take(view, asEvent.status(at(status(WORKING), 9)), 0);
    expect(view).toBe(before);
    expect(view.state).toBe("TASK_STATE_INPUT_REQUIRED");
  });

  it("takes the message of a note on the last change, the gateway's end of a send's wait", () => {
    let view = take(emptyView("t1", "alice"), asEvent.task(at(task(), 9)), 0);
    const note = at(status(INPUT_REQUIRED, { message: message("refused-m1", "refused: no.") }), 9);
    view = take(view, asEvent.status(note), 0);
    expect(texts(view)).toEqual(["agent: refused: no."]);
    expect(view.lines[0]!.kind).toBe("refusal");
    expect(view.version).toBe("9");
  });

  it("takes from a read older than the view only the messages it lacks", () => {
    let view = take(emptyView("t1", "alice"), asEvent.task(at(task({ state: WORKING }), 7)), 0);
    view = take(view, said(9, "Planned."), 0);
    // A read answered before the reply: WORKING, but with a message from another tab.
    const older = at(task({ state: WORKING, history: [message("m1", "From the other tab.", Role.ROLE_USER)] }), 8);
    view = take(view, asEvent.task(older), 0);
    expect(view.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(view.version).toBe("9");
    expect(texts(view)).toEqual(["you: From the other tab.", "agent: Planned."]);
  });

  it("applies a read at the version it has (a resumed stream's first event) and any event without one", () => {
    let view = take(emptyView("t1", "alice"), asEvent.task(at(task({ state: WORKING }), 7)), 0);
    view = take(view, asEvent.task(at(task({ history: [message("r1", "Hi.")] }), 7)), 0);
    expect(texts(view)).toEqual(["agent: Hi."]);
    view = take(view, asEvent.status(status(WORKING)), 0);
    expect(view.state).toBe("TASK_STATE_WORKING");
    expect(view.version).toBe("7");
  });
});
