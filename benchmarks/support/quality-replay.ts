/**
 * Replays one planted run through one system call by call, as its agent harness would: before each assistant
 * message, append what happened since the previous call and ask for the request; the judge looks at every
 * request. A call that throws counts as failed (nothing was sent, so it keeps nothing) and the run goes on.
 */
import type { MessageInput } from "../../src/log/message.js";
import type { MessageCounter } from "../../src/tokens/tokenizer.js";
import { callSignatures } from "./quality-calls.js";
import type { PlantedRun } from "./quality-facts.js";
import { type CallContext, type ChatCounter, RequestJudge, type RequestVerdict } from "./quality-judge.js";
import type { QualitySystem } from "./quality-systems.js";
import { emptyTally, type RunTally, tallyFailure, tallyVerdict } from "./quality-tally.js";

/** Indices where a model call happens: before each assistant message, and at the end unless it is one. */
export function callPoints(messages: ReadonlyArray<MessageInput>): number[] {
  const points: number[] = [];
  messages.forEach((m, i) => {
    if (m.role === "assistant" && i > 0 && messages[i - 1]!.role !== "assistant") points.push(i);
  });
  const last = messages[messages.length - 1];
  if (last !== undefined && last.role !== "assistant") points.push(messages.length);
  return points;
}

/** One run as the replay needs it. */
export interface ReplayInput {
  readonly run: PlantedRun;
  readonly budget: number;
  /** Whether system prompt + pinned constraint (+ task) alone fit the budget, by the judge. */
  readonly pinnedFits: boolean;
  readonly taskFits: boolean;
  readonly counter: MessageCounter;
  readonly chat: ChatCounter;
  /** The texts of the planted run's own messages (`originalTexts`). */
  readonly originals: ReadonlySet<string>;
}

function contextAt(input: ReplayInput, point: number): CallContext {
  const { run } = input;
  const task = run.messages[run.taskIndex]?.parts.find((p) => p.type === "text");
  return {
    budget: input.budget,
    appended: point,
    facts: run.facts,
    calls: callSignatures(run.messages.slice(0, point)),
    originals: input.originals,
    pinnedText: run.pinnedText,
    taskText: task?.type === "text" ? task.text : "",
  };
}

/** Replays `input.run` through `system` and tallies what the judge saw. */
export async function replay(system: QualitySystem, input: ReplayInput): Promise<RunTally> {
  const messages = input.run.messages;
  const session = system.start(input.budget, input.counter);
  const judge = new RequestJudge(input.chat);
  const tally = emptyTally();
  let from = 0;
  let previous: RequestVerdict | undefined;
  for (const point of callPoints(messages)) {
    const context = contextAt(input, point);
    const fresh = messages.slice(from, point);
    from = point;
    const started = performance.now();
    try {
      const request = await session.call(fresh);
      tally.ms.push(performance.now() - started);
      const verdict = judge.judge(request, context);
      tallyVerdict(tally, verdict, previous, input);
      previous = verdict;
    } catch (error) {
      tally.ms.push(performance.now() - started);
      tallyFailure(tally, context, input, error);
    }
    await session.settle();
  }
  await session.close();
  return tally;
}
