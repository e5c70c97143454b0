import { Part, type AgentCard } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { identifiedFetch, messageParts, sameOrigin } from "./client";
import { GatewayRefusal } from "./errors";

const config = { identity: "header" as const, participant_header: "X-Participant-Id" };

function answering(status: number, body: unknown, headers: Record<string, string> = {}) {
  const seen: Headers[] = [];
  const fetchImpl = (async (_input: RequestInfo | URL, init?: RequestInit) => {
    seen.push(new Headers(init?.headers));
    return new Response(JSON.stringify(body), { status, headers });
  }) as typeof fetch;
  return { seen, fetchImpl };
}

describe("the identified fetch", () => {
  it("names the participant in header mode, and sends the token in token-review mode", async () => {
    const header = answering(200, {});
    await identifiedFetch(config, { participant: "alice" }, header.fetchImpl)("/");
    expect(header.seen[0]!.get("X-Participant-Id")).toBe("alice");
    const token = answering(200, {});
    await identifiedFetch({ ...config, identity: "tokenreview" }, { token: "t0k" }, token.fetchImpl)("/");
    expect(token.seen[0]!.get("Authorization")).toBe("Bearer t0k");
    expect(token.seen[0]!.get("X-Participant-Id")).toBeNull();
  });

  it("turns the gateway's refusals before A2A into errors with its sentence", async () => {
    const limited = answering(429, { error: { code: 429, message: "slow down (gateway.rate_limit_per_minute)" } }, { "Retry-After": "3" });
    const error = await identifiedFetch(config, { participant: "a" }, limited.fetchImpl)("/").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GatewayRefusal);
    expect(error).toMatchObject({ status: 429, retryAfter: 3, message: "slow down (gateway.rate_limit_per_minute)" });
  });

  it("leaves every other answer to the A2A client", async () => {
    const refused = answering(404, { error: { message: "task not found" } });
    const response = await identifiedFetch(config, { participant: "a" }, refused.fetchImpl)("/");
    expect(response.status).toBe(404);
  });
});

describe("the card", () => {
  it("is moved to the page's origin, keeping each endpoint's path", () => {
    const card = {
      supportedInterfaces: [
        { url: "http://127.0.0.1:8080/", protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" },
        { url: "http://127.0.0.1:8080/rest", protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" },
      ],
    } as unknown as AgentCard;
    expect(sameOrigin(card, "https://harness.example.org").supportedInterfaces.map((i) => i.url)).toEqual([
      "https://harness.example.org/",
      "https://harness.example.org/rest",
    ]);
  });
});

describe("a message with files", () => {
  it("is its text, then each file as raw bytes with its media type and name, as A2A 1.0 JSON", () => {
    const png = Uint8Array.of(0x89, 0x50, 0x4e, 0x47);
    const sent = messageParts("What is in these?", [
      { name: "chart.png", mediaType: "image/png", bytes: png },
      { name: "notes.txt", mediaType: "text/plain", bytes: new TextEncoder().encode("hi") },
    ]);
    expect(sent.map((p) => Part.toJSON(p))).toEqual([
      { text: "What is in these?" },
      { raw: "iVBORw==", mediaType: "image/png", filename: "chart.png" },
      { raw: "aGk=", mediaType: "text/plain", filename: "notes.txt" },
    ]);
  });

  it("has no empty text part when only files are sent", () => {
    const sent = messageParts("", [{ name: "a.txt", mediaType: "text/plain", bytes: Uint8Array.of(97) }]);
    expect(sent.map((p) => p.content?.$case)).toEqual(["raw"]);
  });
});
