/**
 * A local stand-in for the OpenAI Chat Completions API on 127.0.0.1: it checks every request as strictly as the
 * real API on the rules compaction can break (tool calls and results paired, the context window by its own token
 * count) and answers valid ones from a scripted agent model, with `usage` in its own count.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createTokenizer } from "../src/index.js";
import {
  type ChatRejection,
  checkChatRequest,
  requestTokens,
  type TokenCount,
} from "./chat-request-rules.js";
import { parseObject } from "./json-object.js";
import { readBody } from "./read-body.js";
import {
  createScriptedAgentModel,
  type ScriptedAgentModel,
  type ScriptedReply,
} from "./scripted-agent-model.js";

/** Options of {@link startLocalOpenAIServer}. */
export interface LocalOpenAIServerOptions {
  /** The model's context window: messages + tools + requested output must fit (default 16,000). */
  readonly contextWindow?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string;
  /** What answers valid requests (default: `createScriptedAgentModel()`). */
  readonly model?: ScriptedAgentModel;
}

/** One request the server turned away. */
export interface RejectedRequest {
  /** 1-based number of the request. */
  readonly n: number;
  readonly rejection: ChatRejection;
}

/** What the server has seen so far. */
export interface LocalServerStats {
  readonly requests: number;
  readonly accepted: number;
  readonly rejected: ReadonlyArray<RejectedRequest>;
  /** Largest `prompt + requested output` of an accepted request, by the server's count. */
  readonly maxRequestTokens: number;
  /** Largest `usage.prompt_tokens` reported. */
  readonly maxPromptTokens: number;
}

/** A running local server. */
export interface LocalOpenAIServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** What to pass as the SDK's `baseURL`. */
  readonly baseURL: string;
  readonly contextWindow: number;
  /** The server's own token count of a JSON value (the JSON text, tokenized as gpt-4o does). */
  readonly countTokens: TokenCount;
  stats(): LocalServerStats;
  close(): Promise<void>;
}

const PATH = "/v1/chat/completions";

/** The real API's error body. */
function errorBody(status: number, message: string, param: string | null, code: string | null): unknown {
  const type = status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message, type, param, code } };
}

function send(res: ServerResponse, status: number, body: unknown, n: number): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "x-request-id": `req_local_${String(n).padStart(6, "0")}`,
  });
  res.end(JSON.stringify(body));
}

/** A `chat.completion` body for a reply; `usage` counts the prompt and the reply with the server's count. */
function completion(
  body: Readonly<Record<string, unknown>>,
  reply: ScriptedReply,
  n: number,
  promptTokens: number,
  count: TokenCount,
): unknown {
  const toolCalls = reply.toolCalls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: c.arguments },
  }));
  const completionTokens = (reply.content === null ? 0 : count(reply.content)) + count(toolCalls);
  return {
    id: `chatcmpl-local${String(n).padStart(6, "0")}`,
    object: "chat.completion",
    created: 1_700_000_000 + n,
    model: typeof body.model === "string" ? body.model : "unknown",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.content,
          refusal: null,
          annotations: [],
          ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
        },
        logprobs: null,
        finish_reason: toolCalls.length === 0 ? "stop" : "tool_calls",
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
    system_fingerprint: "fp_local",
  };
}

/**
 * Starts the local server on 127.0.0.1 with an OS-chosen port; point the official SDK at `server.baseURL`.
 * Invalid requests get the real API's 400 (`context_length_exceeded` when over the window) and are counted in
 * `stats().rejected`.
 *
 * @example
 * const server = await startLocalOpenAIServer({ contextWindow: 16_000 });
 * const client = new OpenAI({ apiKey: "sk-local", baseURL: server.baseURL });
 * await client.chat.completions.create({ model: "gpt-4o", messages, tools });
 * await server.close();
 */
export async function startLocalOpenAIServer(
  options: LocalOpenAIServerOptions = {},
): Promise<LocalOpenAIServer> {
  const contextWindow = options.contextWindow ?? 16_000;
  const model = options.model ?? createScriptedAgentModel();
  const tokenizer = createTokenizer({ model: "gpt-4o" });
  // The whole JSON text is tokenized, keys, quotes and escapes included: close to what a client estimates from
  // message contents, but deliberately not the same figure, like a real provider's count.
  const countTokens: TokenCount = (value) => tokenizer.count(JSON.stringify(value ?? ""));
  let requests = 0;
  let accepted = 0;
  let maxRequestTokens = 0;
  let maxPromptTokens = 0;
  const rejected: RejectedRequest[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const text = await readBody(req);
    const n = ++requests;
    const fail = (status: number, message: string, param: string | null = null, code: string | null = null) =>
      send(res, status, errorBody(status, message, param, code), n);
    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== PATH) {
      return fail(404, `Invalid URL (${req.method} ${req.url}): this server serves only POST ${PATH}.`);
    }
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      return fail(401, "Incorrect API key provided.", null, "invalid_api_key");
    }
    const body = parseObject(text);
    if (body === undefined) return fail(400, "We could not parse the JSON body of your request.");
    if (body.stream === true) return fail(400, "This local server does not stream; send stream: false.");
    const rejection = checkChatRequest(body, { maxContextTokens: contextWindow, countTokens });
    if (rejection !== undefined) {
      rejected.push({ n, rejection });
      return fail(rejection.status, rejection.message, rejection.param, rejection.code);
    }
    const tokens = requestTokens(body, countTokens);
    maxRequestTokens = Math.max(maxRequestTokens, tokens.prompt + tokens.output);
    maxPromptTokens = Math.max(maxPromptTokens, tokens.prompt);
    accepted++;
    send(res, 200, completion(body, model(body, n), n, tokens.prompt, countTokens), n);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, errorBody(500, String(error), null, null), requests);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    contextWindow,
    countTokens,
    stats: () => ({
      requests,
      accepted,
      rejected: [...rejected],
      maxRequestTokens,
      maxPromptTokens,
    }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
