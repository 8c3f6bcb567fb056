/**
 * A real HTTP server on 127.0.0.1 that speaks enough of the Anthropic Messages protocol for the official SDK,
 * on the scripted core of `fake-openai-server.ts` (same steps, same recorded requests).
 */
import {
  type FakeServer,
  type RequestHook,
  roughTokens,
  type ScriptedProtocol,
  startScriptedServer,
} from "./fake-openai-server.js";

export type { FakeServer, FakeStep, RecordedRequest } from "./fake-openai-server.js";
export { failWith, replyWith } from "./fake-openai-server.js";

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

/** The Anthropic side: `POST /v1/messages`, `x-api-key` or bearer auth, `message` bodies, `{ type: "error", … }` errors. */
export function anthropicProtocol(apiKey: string | undefined): ScriptedProtocol {
  return {
    path: "/v1/messages",
    baseURL: (url) => url,
    requestIdHeader: "request-id",
    checkAuth: (headers) => {
      if (headers["anthropic-version"] === undefined) return "anthropic-version: header is required";
      // The API takes the key as `x-api-key` or as a bearer token; SDK 1.x sends the bearer form.
      const given = headers["x-api-key"] ?? headers.authorization?.replace(/^Bearer /, "");
      return apiKey === undefined || given === apiKey ? undefined : "invalid x-api-key";
    },
    success: (step, body, n) => {
      const text = step.kind === "reply" ? step.text : null;
      const inputTokens = roughTokens([body.system, body.messages]);
      return {
        id: `msg_fake${String(n).padStart(6, "0")}`,
        type: "message",
        role: "assistant",
        model: typeof body.model === "string" ? body.model : "unknown",
        // A null reply is an answer without any content block; "" is one empty text block.
        content: text === null ? [] : [{ type: "text", text, citations: null }],
        stop_reason: step.kind === "reply" && step.finish === "length" ? "max_tokens" : "end_turn",
        stop_sequence: null,
        usage: {
          input_tokens: inputTokens,
          output_tokens: Math.ceil((text ?? "").length / 4),
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          service_tier: "standard",
        },
      };
    },
    error: (step, n) => ({
      type: "error",
      error: {
        type: ERROR_TYPES[step.status] ?? (step.status >= 500 ? "api_error" : "invalid_request_error"),
        message: step.message ?? `fake error ${step.status}`,
      },
      request_id: `req_fake_${String(n).padStart(4, "0")}`,
    }),
  };
}

/** Options of `startFakeAnthropicServer`. */
export interface FakeAnthropicServerOptions {
  /** When set, requests must carry the key (`x-api-key` or `Authorization: Bearer`) or get a 401. */
  readonly apiKey?: string;
  /** Checked before the queue; a returned step answers the request. */
  readonly onRequest?: RequestHook;
}

/**
 * Starts a fake Anthropic Messages server; point the SDK at `server.baseURL`.
 *
 * @example
 * const server = await startFakeAnthropicServer({ apiKey: "sk-ant-test" });
 * server.enqueue(replyWith('{"goals":["x"]}'));
 * const client = new Anthropic({ apiKey: "sk-ant-test", baseURL: server.baseURL });
 */
export function startFakeAnthropicServer(options: FakeAnthropicServerOptions = {}): Promise<FakeServer> {
  return startScriptedServer(anthropicProtocol(options.apiKey), options.onRequest);
}
