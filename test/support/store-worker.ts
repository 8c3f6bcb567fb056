// A writer in its own process, for the store conformance suite: `node --import tsx store-worker.ts '<json spec>'`.
// It prints one JSON line per event (stdout to a pipe is synchronous on Linux, so a printed ack was written).

import { openTarget, type StoreTarget } from "./store-target.js";
import { type ContendOptions, contend, type WriterEvent, writeForever } from "./store-writer.js";

/** What the parent asks a worker to do. */
export type WorkerSpec =
  | { readonly role: "contend"; readonly target: StoreTarget; readonly options: ContendOptions }
  | {
      readonly role: "crash";
      readonly target: StoreTarget;
      readonly threadId: string;
      readonly workerId: string;
    };

const emit = (event: WriterEvent): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};

/** Resolves when the parent writes `go` to stdin, so every worker starts writing at the same moment. */
function waitForGo(): Promise<void> {
  return new Promise((resolve) => {
    let buffered = "";
    process.stdin.on("data", (chunk: string) => {
      buffered += chunk;
      if (buffered.includes("go\n")) resolve();
    });
  });
}

// A worker never outlives its parent: when the parent's end of stdin closes (it exited or crashed), stop.
process.stdin.setEncoding("utf8");
process.stdin.on("end", () => process.exit(3));
process.stdin.resume();

async function main(spec: WorkerSpec): Promise<void> {
  const stores = await openTarget(spec.target);
  emit({ type: "ready" });
  if (spec.role === "crash") await writeForever(stores, spec.threadId, spec.workerId, emit);
  else {
    await waitForGo();
    await contend(stores, spec.options, emit);
    emit({ type: "done" });
  }
  await stores.close();
  process.stdin.destroy();
}

main(JSON.parse(process.argv[2] ?? "{}") as WorkerSpec).catch((error: unknown) => {
  emit({
    type: "error",
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  process.exit(1);
});
