// Refusals and failures as what to do, not as codes. The gateway's own refusals (an A2A error:
// a watcher's cancel, an ended task, a bad envelope) are already sentences that name the fix,
// and are shown as they are; the HTTP refusals in front of the A2A layer (401, 413, 429) and a
// gateway that cannot be reached are said here. What the page does about a refusal is decided
// by its reason code (reasons.ts), never by its sentence.
import type { ReasonCode } from "./reasons";

/** An HTTP answer the gateway gave before any A2A method ran (its limits, its identity
 * check, or a refusal it answered with an HTTP status): the status, the gateway's message,
 * Retry-After when it said, and the reason code its body carried. */
export class GatewayRefusal extends Error {
  readonly status: number;
  readonly retryAfter: number | null;
  readonly reasonCode: ReasonCode | null;
  constructor(status: number, message: string, retryAfter: number | null = null, reasonCode: ReasonCode | null = null) {
    super(message);
    this.name = "GatewayRefusal";
    this.status = status;
    this.retryAfter = retryAfter;
    this.reasonCode = reasonCode;
  }
}

/** Thrown for a stream the caller stopped on purpose; never shown. */
export function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

export function isUnreachable(error: unknown): boolean {
  // fetch's own failure: a TypeError ("Failed to fetch" in browsers, "fetch failed" in Node),
  // or a stream cut mid-way ("network error", "terminated").
  return (
    error instanceof TypeError ||
    (error instanceof Error && /network|terminated|ECONNREFUSED|Failed to fetch/i.test(error.message))
  );
}

export function explain(error: unknown): string {
  if (error instanceof GatewayRefusal) {
    switch (error.status) {
      case 401:
        return `The gateway does not know who you are: ${lower(error.message)}. Sign in again with your participant id or token.`;
      case 413:
        return "That message is too large for the gateway: send less at once, or split it.";
      case 429: {
        const wait = error.retryAfter ? ` about ${error.retryAfter} s` : " a moment";
        return `Too many requests: wait${wait}, then send again.`;
      }
      default:
        return error.message || `The gateway refused the request (HTTP ${error.status}).`;
    }
  }
  if (isUnreachable(error)) {
    return "The gateway cannot be reached: check that it is running (make run), then try again.";
  }
  const reason = (error as { reason?: unknown } | null)?.reason;
  const message = error instanceof Error ? error.message.trim() : String(error);
  if (reason === "TASK_NOT_FOUND") {
    return "This task does not exist, or you are not one of its participants.";
  }
  return sentence(message || "Something went wrong; try again.");
}

/** When a read refused for too many requests may be made again, in ms; null for any other
 * failure (those wait for the next reason to read). */
export function rereadAfter(error: unknown): number | null {
  if (!(error instanceof GatewayRefusal) || error.status !== 429) return null;
  return Math.max(error.retryAfter ?? 5, 1) * 1000;
}

/** What a list refused for too many requests says while it waits ``ms`` to read again. */
export function rereading(ms: number): string {
  return `Too many requests: the list is read again in about ${ms / 1000} s.`;
}

function lower(text: string): string {
  return text.replace(/[.\s]+$/, "");
}

function sentence(text: string): string {
  const trimmed = text.trim();
  // A sentence that starts with a name from the request (message.parts[2]: ...) keeps it as
  // it is spelled.
  const named = /^[a-z_]+[.[]/.test(trimmed);
  const capital = named ? trimmed : trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
  return /[.!?)]$/.test(capital) ? capital : `${capital}.`;
}
