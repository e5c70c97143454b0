// Why the gateway refused a call or ended a stream, as the code it carries: the page switches
// on these, never on the gateway's sentences, which it only shows (and which may be reworded).
// The codes are the task extension's (docs/a2a/ext/task.md, "Refusals and stream ends"), as
// tiny_harness/core/reason_codes.py spells them (tests/unit/a2a_gateway/test_reason_codes.py
// checks that the two agree).
//
// Where a code travels: under `reason` in the metadata of the google.rpc.ErrorInfo among an
// error's details. The SDK's JSON-RPC errors keep those details as their `data`, its HTTP+JSON
// errors the ErrorInfo's metadata as their `metadata`; an error the SDK read from an SSE event
// is the `cause` of the one it throws; a refusal made before any A2A method (a GatewayRefusal)
// carries the code it was given.

export const REASON_CODES = [
  "unauthenticated",
  "rate_limited",
  "too_many_refused_tokens",
  "body_too_large",
  "body_too_deep",
  "invalid_params",
  "invalid_message",
  "server_controlled_field",
  "message_too_large",
  "over_quota",
  "task_not_found",
  "task_ended",
  "role_refused",
  "parent_not_found",
  "sub_task_too_deep",
  "too_many_streams",
  "stream_behind",
  "answered",
  "not_taken",
  "still_working",
  "not_offered",
  "not_ready",
] as const;

export type ReasonCode = (typeof REASON_CODES)[number];

/** The key a code is carried under. */
export const REASON_KEY = "reason";
const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";

/** ``raw`` when it is a code this page knows; a code it does not know is no code. */
export function asReason(raw: unknown): ReasonCode | null {
  return typeof raw === "string" && (REASON_CODES as readonly string[]).includes(raw) ? (raw as ReasonCode) : null;
}

/** The code in the ErrorInfo among ``details`` (an error's details, as sent). */
export function reasonInDetails(details: unknown): ReasonCode | null {
  if (!Array.isArray(details)) return null;
  for (const detail of details) {
    if (typeof detail === "object" && detail !== null && (detail as { "@type"?: unknown })["@type"] === ERROR_INFO_TYPE) {
      const metadata = (detail as { metadata?: unknown }).metadata;
      if (typeof metadata === "object" && metadata !== null) return asReason((metadata as Record<string, unknown>)[REASON_KEY]);
    }
  }
  return null;
}

/** The code ``error`` carries, or the error it wraps (its ``cause``); null when none does. */
export function reasonOf(error: unknown): ReasonCode | null {
  let seen: unknown = error;
  for (let depth = 0; depth < 4 && typeof seen === "object" && seen !== null; depth++) {
    const carried = seen as { reasonCode?: unknown; metadata?: unknown; data?: unknown; cause?: unknown };
    const found =
      asReason(carried.reasonCode) ??
      (typeof carried.metadata === "object" && carried.metadata !== null
        ? asReason((carried.metadata as Record<string, unknown>)[REASON_KEY])
        : null) ??
      reasonInDetails(carried.data);
    if (found !== null) return found;
    seen = carried.cause;
  }
  return null;
}
