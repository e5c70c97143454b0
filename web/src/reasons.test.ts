import { describe, expect, it } from "vitest";
import { GatewayRefusal } from "./errors";
import { asReason, reasonInDetails, reasonOf } from "./reasons";

const INFO = "type.googleapis.com/google.rpc.ErrorInfo";

describe("the gateway's reason codes", () => {
  it("reads the code from the ErrorInfo among a JSON-RPC error's details, however it is wrapped", () => {
    const data = [
      { "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: [] },
      { "@type": INFO, reason: "UNSUPPORTED_OPERATION", domain: "a2a-protocol.org", metadata: { reason: "task_ended" } },
    ];
    const error = Object.assign(new Error("the task is in a terminal state (TASK_STATE_COMPLETED)"), { data });
    expect(reasonOf(error)).toBe("task_ended");
    expect(reasonOf(new Error("SSE event contained an error", { cause: error }))).toBe("task_ended");
  });

  it("reads it from an HTTP+JSON error's metadata, and from a refusal made before any A2A method", () => {
    expect(reasonOf(Object.assign(new Error("x"), { metadata: { reason: "over_quota", quota: "q" } }))).toBe("over_quota");
    expect(reasonOf(new GatewayRefusal(429, "rate limit exceeded", 3, "rate_limited"))).toBe("rate_limited");
    expect(
      reasonInDetails([{ "@type": INFO, reason: "BODY_TOO_LARGE", domain: "tiny-harness.madarauchiha-314.github.io", metadata: { reason: "body_too_large" } }]),
    ).toBe("body_too_large");
  });

  it("finds no code in a sentence, and takes a code it does not know for none", () => {
    expect(reasonOf(new Error("gateway.max_streams_per_participant"))).toBeNull();
    expect(reasonOf(Object.assign(new Error("x"), { metadata: { reason: "a_code_from_a_later_gateway" } }))).toBeNull();
    expect(asReason("too_many_streams")).toBe("too_many_streams");
    expect(asReason(42)).toBeNull();
    expect(reasonOf(null)).toBeNull();
    expect(reasonOf(new TypeError("Failed to fetch"))).toBeNull();
  });
});
