/**
 * A local stand-in for the Anthropic Messages API on 127.0.0.1, for the agent-loop examples: it turns away what
 * the real API turns away on the rules a harness can break (no `max_tokens`, roles that do not alternate from a
 * user message, a `tool_use` not answered by a `tool_result` at the start of the next user message or a result
 * answering nothing, more than four `cache_control` marks, a tool without `input_schema`) with the API's 400
 * error body, and answers valid requests from a scripted model with `usage` (cache reads counted as the API does).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseObject } from "../../examples/json-object.js";
import { readBody } from "../../examples/read-body.js";

type Json = Record<string, unknown>;

/** The content blocks of the reply to the `n`-th request (1-based). */
export type AnthropicScript = (body: Readonly<Json>, n: number) => ReadonlyArray<Json>;

/** A running server: point the SDK's `baseURL` at `url`. */
export interface LocalAnthropicServer {
  readonly url: string;
  /** Every request body, accepted or not, in order. */
  readonly requests: ReadonlyArray<Json>;
  /** Why each turned-away request was refused. */
  readonly rejections: ReadonlyArray<string>;
  close(): Promise<void>;
}

const blocksOf = (message: unknown): Json[] => {
  const content = (message as { content?: unknown }).content;
  return typeof content === "string" ? [{ type: "text", text: content }] : ((content as Json[]) ?? []);
};

/** Counts `cache_control` marks anywhere in a value. */
function cacheMarks(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + cacheMarks(v), 0);
  if (typeof value !== "object" || value === null) return 0;
  return Object.entries(value).reduce((n, [k, v]) => n + (k === "cache_control" ? 1 : cacheMarks(v)), 0);
}

/** The first rule the request breaks, or undefined. */
export function checkMessagesRequest(body: Json): string | undefined {
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  const messages = body.messages as Json[] | undefined;
  if (!Array.isArray(messages) || messages.length === 0) return "messages: at least one message is required";
  let open: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role !== (i % 2 === 0 ? "user" : "assistant")) {
      return `messages.${i}.role: roles must alternate between "user" and "assistant", starting with "user"`;
    }
    const blocks = blocksOf(m);
    if (m.role === "user") {
      const results = blocks.filter((b) => b.type === "tool_result").map((b) => String(b.tool_use_id));
      const leading = blocks.slice(0, results.length).every((b) => b.type === "tool_result");
      if (!leading || results.length !== open.length || open.some((id) => !results.includes(id))) {
        return `messages.${i}: each tool_use block must have a corresponding tool_result block at the start of the next message`;
      }
    } else if (open.length > 0) return `messages.${i}: tool_use ids were found without tool_result blocks`;
    open = m.role === "assistant" ? blocks.filter((b) => b.type === "tool_use").map((b) => String(b.id)) : [];
  }
  if (open.length > 0) return "messages: the last tool_use blocks have no tool_result";
  if (cacheMarks(body) > 4) return "A maximum of 4 blocks with cache_control may be provided";
  const tools = (body.tools as Json[] | undefined) ?? [];
  if (tools.some((t) => typeof t.name !== "string" || typeof t.input_schema !== "object")) {
    return "tools: each tool needs a name and an input_schema";
  }
  return undefined;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "request-id": "req_local" });
  res.end(JSON.stringify(body));
}

/** Starts the server on an OS-chosen port. Input tokens are the request's JSON length / 4; a repeat is "cached". */
export async function startLocalAnthropicServer(script: AnthropicScript): Promise<LocalAnthropicServer> {
  const requests: Json[] = [];
  const rejections: string[] = [];
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = parseObject(await readBody(req)) ?? {};
    requests.push(body);
    const fail = (status: number, message: string) =>
      send(res, status, { type: "error", error: { type: "invalid_request_error", message } });
    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== "/v1/messages")
      return fail(404, "Not found");
    if (req.headers["anthropic-version"] === undefined)
      return fail(400, "anthropic-version: header is required");
    const problem = checkMessagesRequest(body);
    if (problem !== undefined) {
      rejections.push(problem);
      return fail(400, problem);
    }
    const content = script(body, requests.length);
    const total = Math.ceil(JSON.stringify(body.messages).length / 4);
    const cached = cacheMarks(body) > 0 && requests.length > 1 ? Math.floor(total / 2) : 0;
    send(res, 200, {
      id: `msg_local${requests.length}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content,
      stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: total - cached,
        output_tokens: Math.ceil(JSON.stringify(content).length / 4),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
      },
    });
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) =>
      send(res, 500, { type: "error", error: { message: String(error) } }),
    );
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    rejections,
    close: () =>
      new Promise<void>((done, fail) => {
        server.closeAllConnections();
        server.close((error) => (error ? fail(error) : done()));
      }),
  };
}
