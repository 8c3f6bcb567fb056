/**
 * A real HTTP server on 127.0.0.1 that speaks enough of the OpenAI Chat Completions protocol for the official
 * SDK: replies are scripted per request from a queue, and every request is recorded for assertions. The
 * scripted core is shared with the Anthropic fake (`fake-anthropic-server.ts`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type ChatRequestLimits, checkChatRequest, roughTokens } from "../../examples/chat-request-rules.js";
import { readBody } from "../../examples/read-body.js";

export type { ChatRequestLimits } from "../../examples/chat-request-rules.js";
export { roughTokens } from "../../examples/chat-request-rules.js";

/** Answer with this text (`null` = no content) after an optional delay. */
export interface ReplyStep {
  readonly kind: "reply";
  readonly text: string | null;
  /** `length` = cut at the token limit (OpenAI `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`). */
  readonly finish?: "stop" | "length";
  readonly delayMs?: number;
}

/** Answer 200 without any choice / content block. */
export interface NoChoicesStep {
  readonly kind: "no_choices";
  readonly delayMs?: number;
}

/** Answer with an HTTP error in the provider's error body shape. */
export interface ErrorStep {
  readonly kind: "error";
  readonly status: number;
  readonly message?: string;
  /** Sent as the `retry-after` header (seconds). */
  readonly retryAfterSeconds?: number;
  /** OpenAI `error.code` (e.g. `context_length_exceeded`). */
  readonly code?: string;
  /** OpenAI `error.param` (e.g. `messages.[3].role`). */
  readonly param?: string;
  readonly delayMs?: number;
}

/** Answer with exactly this body (e.g. broken JSON). */
export interface RawStep {
  readonly kind: "raw";
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
  readonly delayMs?: number;
}

/** What the fake does with one request. */
export type FakeStep = ReplyStep | NoChoicesStep | ErrorStep | RawStep;

/** A reply step. */
export const replyWith = (
  text: string | null,
  options: { readonly finish?: "stop" | "length"; readonly delayMs?: number } = {},
): ReplyStep => ({ kind: "reply", text, ...options });

/** An error step. */
export const failWith = (status: number, options: Omit<ErrorStep, "kind" | "status"> = {}): ErrorStep => ({
  kind: "error",
  status,
  ...options,
});

/** One request as the fake received it. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed JSON body (`undefined` when it was not JSON). */
  readonly body: unknown;
}

/** A running fake provider. */
export interface FakeServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** What to pass as the SDK's `baseURL`. */
  readonly baseURL: string;
  /** Every request received, in arrival order. */
  readonly requests: ReadonlyArray<RecordedRequest>;
  /** Scripts the next requests, one step each, in order. */
  enqueue(...steps: ReadonlyArray<FakeStep>): void;
  close(): Promise<void>;
}

/** How one provider shapes its endpoint, bodies and headers; the scripted core does the rest. */
export interface ScriptedProtocol {
  readonly path: string;
  readonly baseURL: (url: string) => string;
  /** The problem with the credentials, or undefined when they are fine. */
  readonly checkAuth: (headers: Readonly<Record<string, string>>) => string | undefined;
  readonly success: (step: ReplyStep | NoChoicesStep, body: Record<string, unknown>, n: number) => unknown;
  readonly error: (step: ErrorStep, n: number) => unknown;
  readonly requestIdHeader: string;
}

/** Decides a request before the queue does; returning a step (usually an error) answers with it. */
export type RequestHook = (body: Record<string, unknown>, request: RecordedRequest) => FakeStep | undefined;

/** Starts a scripted server for a protocol on 127.0.0.1 with an OS-chosen port. */
export async function startScriptedServer(
  protocol: ScriptedProtocol,
  onRequest?: RequestHook,
): Promise<FakeServer> {
  const queue: FakeStep[] = [];
  const requests: RecordedRequest[] = [];
  let served = 0;
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: String(error) });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const headers = lowerHeaders(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers, body };
    requests.push(recorded);
    const n = ++served;
    const reply = (step: FakeStep) => answer(res, protocol, step, n, body as Record<string, unknown>);
    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== protocol.path) {
      return reply(failWith(404, { message: `the fake serves only POST ${protocol.path}` }));
    }
    const authProblem = protocol.checkAuth(headers);
    if (authProblem !== undefined) return reply(failWith(401, { message: authProblem }));
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      return reply(failWith(400, { message: "the request body must be a JSON object" }));
    }
    if ((body as { stream?: unknown }).stream === true) {
      return reply(failWith(400, { message: "the fake does not stream; send stream: false" }));
    }
    const hooked = onRequest?.(body as Record<string, unknown>, recorded);
    const step = hooked ?? queue.shift() ?? failWith(500, { message: "fake server: no scripted step left" });
    return reply(step);
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: protocol.baseURL(url),
    requests,
    enqueue: (...steps) => {
      queue.push(...steps);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Delayed replies hold their sockets open; end them so close() does not wait for the delays.
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

async function answer(
  res: ServerResponse,
  protocol: ScriptedProtocol,
  step: FakeStep,
  n: number,
  body: Record<string, unknown>,
): Promise<void> {
  if (step.delayMs !== undefined && !(await waitOrClose(res, step.delayMs))) return;
  const requestId = `req_fake_${String(n).padStart(4, "0")}`;
  if (step.kind === "raw") {
    res.writeHead(step.status, {
      "content-type": step.contentType ?? "application/json",
      [protocol.requestIdHeader]: requestId,
    });
    res.end(step.body);
    return;
  }
  if (step.kind === "error") {
    const extra =
      step.retryAfterSeconds === undefined ? {} : { "retry-after": String(step.retryAfterSeconds) };
    send(res, step.status, protocol.error(step, n), { [protocol.requestIdHeader]: requestId, ...extra });
    return;
  }
  send(res, 200, protocol.success(step, body, n), { [protocol.requestIdHeader]: requestId });
}

/** Waits `ms`; false when the client went away first (an aborted or timed-out request). */
function waitOrClose(res: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(!res.destroyed), ms);
    res.once("close", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function lowerHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAI Chat Completions

const OPENAI_ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "invalid_request_error",
  403: "invalid_request_error",
  404: "invalid_request_error",
  429: "rate_limit_exceeded",
};

/** The OpenAI side: `POST /v1/chat/completions`, bearer auth, `chat.completion` bodies, `{ error: … }` errors. */
export function openAIProtocol(apiKey: string | undefined): ScriptedProtocol {
  return {
    path: "/v1/chat/completions",
    baseURL: (url) => `${url}/v1`,
    requestIdHeader: "x-request-id",
    checkAuth: (headers) =>
      apiKey === undefined || headers.authorization === `Bearer ${apiKey}`
        ? undefined
        : "Incorrect API key provided.",
    success: (step, body, n) => {
      const content = step.kind === "reply" ? step.text : null;
      const promptTokens = roughTokens(body.messages);
      const completionTokens = Math.ceil((content ?? "").length / 4);
      return {
        id: `chatcmpl-fake${String(n).padStart(6, "0")}`,
        object: "chat.completion",
        created: 1_700_000_000 + n,
        model: typeof body.model === "string" ? body.model : "unknown",
        choices:
          step.kind === "no_choices"
            ? []
            : [
                {
                  index: 0,
                  message: { role: "assistant", content, refusal: null, annotations: [] },
                  logprobs: null,
                  finish_reason: step.finish ?? "stop",
                },
              ],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
          prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        },
        service_tier: "default",
        system_fingerprint: "fp_fake",
      };
    },
    error: (step) => ({
      error: {
        message: step.message ?? `fake error ${step.status}`,
        type:
          OPENAI_ERROR_TYPES[step.status] ?? (step.status >= 500 ? "server_error" : "invalid_request_error"),
        param: step.param ?? null,
        code: step.code ?? (step.status === 401 ? "invalid_api_key" : null),
      },
    }),
  };
}

/** Options of `startFakeOpenAIServer`. */
export interface FakeOpenAIServerOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get a 401. */
  readonly apiKey?: string;
  /** Checked before the queue, e.g. `chatRequestValidator(…)`, so invalid requests fail like the real API. */
  readonly onRequest?: RequestHook;
}

/**
 * Starts a fake OpenAI Chat Completions server; point the SDK at `server.baseURL`.
 *
 * @example
 * const server = await startFakeOpenAIServer({ apiKey: "sk-test" });
 * server.enqueue(replyWith('{"goals":["x"]}'), failWith(429, { retryAfterSeconds: 1 }));
 * const client = new OpenAI({ apiKey: "sk-test", baseURL: server.baseURL });
 */
export function startFakeOpenAIServer(options: FakeOpenAIServerOptions = {}): Promise<FakeServer> {
  return startScriptedServer(openAIProtocol(options.apiKey), options.onRequest);
}

// ---------------------------------------------------------------------------------------------------------------
// request validation, as strict as the real API on the rules compaction can break (the rules live with the
// example's local server, which checks every request the same way)

/**
 * The error the real API would answer a Chat Completions body with, or undefined when it is acceptable (see
 * `checkChatRequest`: tool calls and results paired, the request within the context window).
 */
export function validateChatRequest(
  body: Record<string, unknown>,
  limits: ChatRequestLimits = {},
): ErrorStep | undefined {
  const rejection = checkChatRequest(body, limits);
  if (rejection === undefined) return undefined;
  return failWith(rejection.status, {
    message: rejection.message,
    ...(rejection.param === null ? {} : { param: rejection.param }),
    ...(rejection.code === null ? {} : { code: rejection.code }),
  });
}

/** A `RequestHook` that rejects invalid chat requests with the real API's 400 errors. */
export function chatRequestValidator(limits: ChatRequestLimits = {}): RequestHook {
  return (body) => validateChatRequest(body, limits);
}
