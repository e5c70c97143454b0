import { describe, expect, it } from "vitest";
import { explain, GatewayRefusal, rereadAfter, rereading } from "./errors";

describe("errors as what to do", () => {
  it("says what to do about the gateway's HTTP refusals, not their codes", () => {
    const unknown = explain(new GatewayRefusal(401, "this gateway needs the X-Participant-Id header naming you as a participant"));
    expect(unknown).toMatch(/does not know who you are/);
    expect(unknown).toMatch(/Sign in again/);
    expect(explain(new GatewayRefusal(413, "the request body is 2000000 bytes"))).toBe(
      "That message is too large for the gateway: send less at once, or split it.",
    );
    expect(explain(new GatewayRefusal(429, "rate limited", 7))).toBe("Too many requests: wait about 7 s, then send again.");
    expect(explain(new GatewayRefusal(429, "rate limited"))).toBe("Too many requests: wait a moment, then send again.");
    for (const code of [401, 413, 429]) expect(explain(new GatewayRefusal(code, "x"))).not.toMatch(String(code));
  });

  it("says the gateway cannot be reached when fetch fails", () => {
    expect(explain(new TypeError("Failed to fetch"))).toMatch(/cannot be reached: check that it is running/);
  });

  it("shows the gateway's own refusal as its sentence", () => {
    const refusal = Object.assign(new Error("refused: bob is a watcher and may not complete the task; ask its assignee or reporter"), {
      reason: "UNSUPPORTED_OPERATION",
    });
    expect(explain(refusal)).toBe("Refused: bob is a watcher and may not complete the task; ask its assignee or reporter.");
  });

  it("says a missing task may be one you are not on", () => {
    expect(explain(Object.assign(new Error("task 'x' not found"), { reason: "TASK_NOT_FOUND" }))).toMatch(/not one of its participants/);
  });

  it("reads again after a 429 once Retry-After has passed, and never after other failures", () => {
    expect(rereadAfter(new GatewayRefusal(429, "rate limited", 7))).toBe(7000);
    expect(rereadAfter(new GatewayRefusal(429, "rate limited"))).toBe(5000);
    expect(rereadAfter(new GatewayRefusal(429, "rate limited", 0))).toBe(1000);
    expect(rereadAfter(new GatewayRefusal(413, "too large"))).toBeNull();
    expect(rereadAfter(new TypeError("Failed to fetch"))).toBeNull();
    expect(rereading(1000)).toBe("Too many requests: the list is read again in about 1 s.");
  });

  it("keeps a sentence that starts with a name from the request as it is spelled", () => {
    const refused = new Error("message.parts[2]: the file notes.txt is 200 KiB; send a smaller file");
    expect(explain(refused)).toBe("message.parts[2]: the file notes.txt is 200 KiB; send a smaller file.");
    expect(explain(new Error("bob may not cancel"))).toBe("Bob may not cancel.");
  });
});
