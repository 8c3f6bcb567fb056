import type { LogView } from "../log/log-view.js";
import type { RenderedPrompt } from "../render/rendered-prompt.js";
import { withholdAboveClearance } from "../render/withhold-content.js";
import type { RenderFormatVersion } from "../texts/placeholders.js";
import type { EngineCore } from "./engine-core.js";

/**
 * A rendered request as the engine's reader may see it: content above the engine's `clearance` replaced by
 * stubs, or refused with `ClearanceError`, as `aboveClearance` says. The same prompt when nothing is above it.
 */
export function readerView(
  core: EngineCore,
  log: LogView,
  prompt: RenderedPrompt,
  what: string,
  formatVersion?: RenderFormatVersion,
): RenderedPrompt {
  const { clearance, aboveClearance: policy } = core.settings;
  return withholdAboveClearance(
    prompt,
    log,
    { clearance, policy },
    {
      counter: core.counter,
      what: `${what} of thread ${JSON.stringify(prompt.threadId)}`,
      ...(formatVersion === undefined ? {} : { formatVersion }),
    },
  );
}
