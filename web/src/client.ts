// The UI's connection to the gateway that serves it: the official A2A client (@a2a-js/sdk,
// A2A 1.0 over JSON-RPC, SSE for streams) acting as one participant.
//
// Identity is what the gateway's mode asks for (/ui/config.json says which): the participant
// id header in header mode, a bearer token in token-review mode, sent with every request by
// the fetch the SDK is given. The HTTP refusals the gateway makes before any A2A method runs
// (401, 413, 429) become a GatewayRefusal carrying the gateway's own sentence.
//
// A followed task's stream survives a gateway that restarts, ends it or is replaced, and a
// network that drops: the subscription is opened again after a growing pause (bounded, reset
// by an event), each attempt announced so the page can say so, and names the last version the
// page applied (Last-Event-ID), so the gateway sends what was missed and nothing else; the fold
// skips whatever it already has (resume.ts says which ends are final).
import {
  Role,
  type AgentCard,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
} from "@a2a-js/sdk";
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from "@a2a-js/sdk/client";
import { decisionEnvelope, type Verdict } from "./approval";
import { commandsOf, type CommandSpec } from "./commands";
import type { Envelope } from "./envelope";
import type { Json } from "./extension";
import { GatewayRefusal, isAbort } from "./errors";
import { reasonInDetails, type ReasonCode } from "./reasons";
import { afterStream, LAST_EVENT_ID, reconnectPause } from "./resume";
import { EVENT_MEDIA_TYPE, TASK_EXT_KEY } from "./wire";

export type IdentityMode = "header" | "tokenreview";

export interface UiConfig {
  identity: IdentityMode;
  participant_header: string;
}

/** What the participant gave at sign-in: an id (header mode) or a token (token-review). */
export type Credentials = { participant: string } | { token: string };

export type Followed =
  | { kind: "event"; event: StreamResponse }
  | { kind: "reconnecting"; reason: unknown; pause: number }
  /** The gateway will not follow the task for us (the stream limit, say): why, as a sentence.
   * Nothing more comes: following again would be refused again. */
  | { kind: "refused"; why: string };

const REFUSED_BEFORE_A2A = new Set([401, 413, 429]);

export async function loadConfig(fetchImpl: typeof fetch = fetch): Promise<UiConfig> {
  const response = await fetchImpl(new URL("config.json", uiBase()));
  if (!response.ok) throw new GatewayRefusal(response.status, "the UI's settings could not be read");
  return (await response.json()) as UiConfig;
}

/** The folder the page was served from (/ui/), whatever the page's query says. */
function uiBase(): URL {
  return new URL("./", window.location.href);
}

/** A fetch that names the participant and turns the gateway's pre-A2A refusals into errors. */
export function identifiedFetch(
  config: UiConfig,
  credentials: Credentials,
  fetchImpl: typeof fetch = (input, init) => fetch(input, init),
): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    if ("token" in credentials) headers.set("Authorization", `Bearer ${credentials.token}`);
    else headers.set(config.participant_header, credentials.participant);
    const response = await fetchImpl(input, { ...init, headers });
    if (REFUSED_BEFORE_A2A.has(response.status)) {
      const { message, code } = await refusalOf(response);
      throw new GatewayRefusal(response.status, message, Number(response.headers.get("Retry-After")) || null, code);
    }
    return response;
  };
}

/** A refusal's sentence and its reason code (in its body's details, reasons.ts). */
async function refusalOf(response: Response): Promise<{ message: string; code: ReasonCode | null }> {
  try {
    const body = (await response.json()) as { error?: { message?: unknown; details?: unknown } };
    const message = typeof body.error?.message === "string" ? body.error.message : response.statusText;
    return { message, code: reasonInDetails(body.error?.details) };
  } catch {
    return { message: response.statusText, code: null };
  }
}

/** ``card`` with every interface moved to this page's origin: the gateway serves the page, so
 * its endpoints are here, whatever base URL it advertises (a port-forward, an ingress). */
export function sameOrigin(card: AgentCard, origin: string): AgentCard {
  return {
    ...card,
    supportedInterfaces: card.supportedInterfaces.map((i) => {
      const url = new URL(i.url, origin);
      return { ...i, url: `${origin}${url.pathname}${url.search}` };
    }),
  };
}

function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" };
}

/** A file to send: its bytes, media type and name. */
export interface OutgoingFile {
  name: string;
  mediaType: string;
  bytes: Uint8Array;
}

/** A file as an A2A 1.0 part: its bytes (`raw`, base64 in the JSON), media type and name. */
export function filePart(file: OutgoingFile): Part {
  return {
    // The SDK types raw as Node's Buffer; any Uint8Array serialises the same (buffer.ts).
    content: { $case: "raw", value: file.bytes as never },
    metadata: undefined,
    filename: file.name,
    mediaType: file.mediaType,
  };
}

/** A message's parts: its text (when there is any), then its files in the order chosen. */
export function messageParts(text: string, files: readonly OutgoingFile[] = []): Part[] {
  return [...(text ? [textPart(text)] : []), ...files.map(filePart)];
}

function userMessage(taskId: string, parts: Part[], metadata?: Record<string, unknown>): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId: "",
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

export class HarnessClient {
  readonly commands: CommandSpec[];
  /** How a pause between two streams is waited out (tests give their own). */
  pause: (ms: number, signal: AbortSignal) => Promise<void> = sleep;

  private constructor(
    private readonly client: Client,
    readonly card: AgentCard,
    /** The participant the gateway takes this session for. */
    readonly me: string,
  ) {
    this.commands = commandsOf(card);
  }

  /** Over an A2A client already made, for ``me`` (tests give their own client). */
  static over(client: Client, card: AgentCard, me: string): HarnessClient {
    return new HarnessClient(client, card, me);
  }

  /** Check the credentials with the gateway (who it takes us for), read its card, and make
   * the A2A client. Throws what the gateway refused, or why it cannot be reached. */
  static async connect(config: UiConfig, credentials: Credentials): Promise<HarnessClient> {
    const fetchImpl = identifiedFetch(config, credentials);
    const who = await fetchImpl(new URL("whoami", uiBase()));
    const me = ((await who.json()) as { participant: string }).participant;
    const origin = window.location.origin;
    const card = sameOrigin(await new DefaultAgentCardResolver({ fetchImpl }).resolve(origin), origin);
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      preferredTransports: ["JSONRPC"],
    });
    return new HarnessClient(await factory.createFromAgentCard(card), card, me);
  }

  /** Every task this participant may see (all pages), newest change first. */
  async tasks(): Promise<Task[]> {
    const out: Task[] = [];
    let pageToken = "";
    do {
      const page = await this.client.listTasks({
        tenant: "",
        contextId: "",
        status: 0,
        pageSize: 100,
        pageToken,
        statusTimestampAfter: undefined,
      });
      out.push(...page.tasks);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return out;
  }

  task(taskId: string): Promise<Task> {
    return this.client.getTask({ tenant: "", id: taskId });
  }

  /** Send ``text`` and ``files`` (to ``taskId``, or as a new task described by ``envelope``);
   * the message goes first, so the page can show it at once, then what the gateway streams. */
  send(
    text: string,
    target: { taskId: string } | { envelope: Envelope },
    files: readonly OutgoingFile[] = [],
  ): { message: Message; events: AsyncGenerator<StreamResponse, void, undefined> } {
    const parts = messageParts(text, files);
    const message =
      "taskId" in target
        ? userMessage(target.taskId, parts)
        : userMessage("", parts, { [TASK_EXT_KEY]: target.envelope });
    return { message, events: this.stream(message) };
  }

  /** Ask for the task to end as completed: the control envelope, as any A2A client sends it. */
  complete(taskId: string): AsyncGenerator<StreamResponse, void, undefined> {
    const part: Part = {
      content: { $case: "data", value: { kind: "control", action: "complete" } },
      metadata: undefined,
      filename: "",
      mediaType: EVENT_MEDIA_TYPE,
    };
    return this.stream(userMessage(taskId, [part]));
  }

  /** Approve or reject the call ``callId`` that waits on ``taskId`` in ``park`` (``args``: an approval's
   * edited arguments, when its policy allows it): the control envelope, as any A2A client
   * sends it. The message goes first, so the page can find the answer to it: the operator's
   * reply is the status message cmd-<its id>, a refusal refused-<its id>. */
  decide(
    taskId: string,
    callId: string,
    park: string,
    verdict: Verdict,
    reason: string,
    args: Json | null = null,
  ): { message: Message; events: AsyncGenerator<StreamResponse, void, undefined> } {
    const part: Part = {
      content: { $case: "data", value: decisionEnvelope(callId, park, verdict, reason, args) },
      metadata: undefined,
      filename: "",
      mediaType: EVENT_MEDIA_TYPE,
    };
    const message = userMessage(taskId, [part]);
    return { message, events: this.stream(message) };
  }

  cancel(taskId: string): Promise<Task> {
    return this.client.cancelTask({ tenant: "", id: taskId, metadata: undefined });
  }

  private stream(message: Message): AsyncGenerator<StreamResponse, void, undefined> {
    return this.client.sendMessageStream({
      tenant: "",
      message,
      configuration: undefined,
      metadata: undefined,
    });
  }

  /** The task's events for as long as the caller iterates (or until ``signal``), through
   * reconnections, each naming ``since()`` (the last version the page applied) when there is
   * one. It ends when the gateway will not follow an ended task, and after a refusal that
   * would only be made again; a task that does not exist (or no longer) ends it with that
   * error. */
  async *follow(
    taskId: string,
    signal: AbortSignal,
    since: () => string | null = () => null,
  ): AsyncGenerator<Followed, void, undefined> {
    let attempt = 0;
    while (!signal.aborted) {
      let failure: unknown = null;
      try {
        const version = since();
        const serviceParameters = version === null ? undefined : { [LAST_EVENT_ID]: version };
        const events = this.client.resubscribeTask({ tenant: "", id: taskId }, { signal, serviceParameters });
        for await (const event of events) {
          attempt = 0;
          yield { kind: "event", event };
        }
      } catch (error) {
        if (signal.aborted || isAbort(error)) return;
        failure = error;
      }
      const end = afterStream(failure);
      if (end.kind === "gone") throw end.error;
      if (end.kind === "ended") return;
      if (end.kind === "refused") {
        yield { kind: "refused", why: end.why };
        return;
      }
      attempt += 1;
      const pause = reconnectPause(attempt, end.retryAfter);
      yield { kind: "reconnecting", reason: end.why, pause };
      await this.pause(pause, signal);
    }
  }
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done);
  });
}
