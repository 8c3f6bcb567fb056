/**
 * A thread for the audit report: a seeded sample session appended in steps, one `prepareTurn` after each at a
 * budget tight enough that compaction commits several plan versions. Two planted messages: a tool result with
 * a rare marker (it ends up compacted) and a user message carrying markup that must stay text in the report.
 */
import { createContextEngine } from "../../src/context-engine.js";
import type { MessageInput } from "../../src/log/message.js";
import { generateSampleSession } from "../../src/sample/index.js";
import { openSqliteStores } from "../../src/stores/sqlite/index.js";

/** Text planted in an early tool result, found by the report's search. */
export const REPORT_MARKER = "QZ-4471 staging credentials rotated";

/** A user message that would run script if the report ever wrote log text as markup. */
export const HOSTILE_TEXT = `</script><img src=x onerror="window.__pwned=1"><b id="injected">bold</b> & "quotes"`;

/** What `buildReportThread` made. */
export interface ReportThread {
  readonly threadId: string;
  readonly calls: number;
}

/** Builds the thread in the SQLite file at `dbPath` and closes it. */
export async function buildReportThread(
  dbPath: string,
  options: { readonly steps?: number; readonly budget?: number } = {},
): Promise<ReportThread> {
  const threadId = "report-thread";
  const steps = options.steps ?? 12;
  const stores = await openSqliteStores({ path: dbPath });
  try {
    const engine = createContextEngine({ stores, budget: { contextWindow: 1_000_000 } });
    const session = generateSampleSession({ messages: steps * 8, seed: 17 });
    const planted: MessageInput[] = [
      {
        id: "planted-call",
        role: "assistant",
        parts: [{ type: "tool_call", callId: "pc1", name: "read_file", args: '{"path":"ops/notes.md"}' }],
      },
      {
        id: "planted-result",
        role: "tool",
        parts: [
          {
            type: "tool_result",
            callId: "pc1",
            // "İ" lower-cases to two code units: the search must still mark the marker itself.
            content: `İİİ İZMİR ops: ${REPORT_MARKER}\n${"ops log line\n".repeat(200)}`,
          },
        ],
      },
      { id: "hostile", role: "user", parts: [{ type: "text", text: HOSTILE_TEXT }] },
    ];
    // The planted messages go after the session's opening (system prompt and task).
    const messages = [...session.slice(0, 2), ...planted, ...session.slice(2)];
    const per = Math.ceil(messages.length / steps);
    let calls = 0;
    for (let i = 0; i < messages.length; i += per) {
      await engine.append(threadId, messages.slice(i, i + per));
      await engine.prepareTurn(threadId, { format: "openai", budget: options.budget ?? 3_000 });
      calls++;
    }
    await engine.idle();
    return { threadId, calls };
  } finally {
    await stores.close();
  }
}
