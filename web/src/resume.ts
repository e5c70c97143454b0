// Following a task across streams that end: which events are news, how long to wait before
// following again, and what the end of a stream means. Pure; client.ts acts on it.
//
// The gateway's streams are resumable (docs/design/gateway.md). Every event carries the task's
// version (its resourceVersion, under the task extension key, and the SSE event id), strictly
// increasing along a task's stream. A client whose stream ended subscribes again with
// Last-Event-ID: the last version it applied, on any replica, and is sent what it missed, then
// the live changes. Nothing missed, the first event is the task at the version it already has,
// so an event whose version is not after the last applied is old news (fold.ts skips it).
//
// A stream ends without its task ending: the gateway's lifetime for a stream, a reader it
// found too slow, a gateway stopped or unreachable, a network gone. Each is followed again
// after a pause: 0.5 s, doubling, at most 5 s, from 0.5 s again once an event arrives. A few
// ends are final, since following again would be refused again: the participant's streams at
// the gateway's limit (code too_many_streams), credentials it does not take, a task that is
// not there. An ended task is not followed (the gateway refuses to, code task_ended), only
// read. Which end it is comes from the gateway's reason code (reasons.ts) and the HTTP status,
// never from its sentences, which are only shown.
import { explain, GatewayRefusal } from "./errors";
import { reasonOf } from "./reasons";

/** The header a resuming stream names its last applied version in. */
export const LAST_EVENT_ID = "Last-Event-ID";

/** The first pause before following again, and the longest (ms). */
export const FIRST_PAUSE_MS = 500;
export const LONGEST_PAUSE_MS = 5000;

/** Whether ``version`` is after ``than`` (both strings of digits, as the gateway sends them);
 * every version is after none. */
export function isAfter(version: string, than: string | null): boolean {
  return than === null || BigInt(version) > BigInt(than);
}

/** The pause before following again for the ``attempt``-th time in a row (1: the first), or
 * as the gateway asked (Retry-After, in seconds), never longer than the longest. */
export function reconnectPause(attempt: number, retryAfter: number | null = null): number {
  if (retryAfter !== null) return Math.min(Math.max(retryAfter * 1000, 0), LONGEST_PAUSE_MS);
  const doublings = Math.min(Math.max(attempt - 1, 0), 16);
  return Math.min(FIRST_PAUSE_MS * 2 ** doublings, LONGEST_PAUSE_MS);
}

/** What to do once a stream has ended: follow again after a pause (``why`` it ended; the
 * gateway's Retry-After in seconds when it said), stop and say why (``refused``, or ``gone``
 * for a task that is not there, whose error the page shows), or stop quietly (``ended``: the
 * gateway follows no ended task; what the page read says how it ended). */
export type StreamEnd =
  | { kind: "resume"; why: unknown; retryAfter: number | null }
  | { kind: "refused"; why: string }
  | { kind: "gone"; error: unknown }
  | { kind: "ended" };

/** The end of a stream that ended with ``error`` (null: it ended cleanly). */
export function afterStream(error: unknown): StreamEnd {
  if (error === null || error === undefined) {
    return { kind: "resume", why: new Error("the gateway ended the stream"), retryAfter: null };
  }
  // An error the gateway sent mid-stream arrives wrapped: the A2A error is its cause.
  const a2a = typed(error) ?? typed((error as { cause?: unknown }).cause);
  const said = a2a?.message ?? (error instanceof Error ? error.message : String(error));
  const code = reasonOf(error);
  if (code === "too_many_streams") {
    // The gateway's own sentence, as it is: it begins with the participant's id.
    return { kind: "refused", why: /[.!?]$/.test(said) ? said : `${said}.` };
  }
  if (error instanceof GatewayRefusal) {
    // Too many requests passes (Retry-After says when); credentials refused do not.
    if (error.status === 429) return { kind: "resume", why: error, retryAfter: error.retryAfter };
    return { kind: "refused", why: explain(error) };
  }
  if (a2a?.reason === "TASK_NOT_FOUND" || code === "task_not_found") return { kind: "gone", error: a2a ?? error };
  if (code === "task_ended") return { kind: "ended" };
  if (code === "stream_behind") {
    const why = new Error("the gateway ended the stream: this page read it too slowly");
    return { kind: "resume", why, retryAfter: null };
  }
  return { kind: "resume", why: a2a ?? error, retryAfter: null };
}

/** ``value`` when it is an A2A error the SDK decoded (it has a reason). */
function typed(value: unknown): (Error & { reason: string }) | null {
  return value instanceof Error && typeof (value as { reason?: unknown }).reason === "string"
    ? (value as Error & { reason: string })
    : null;
}
