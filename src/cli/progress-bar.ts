/**
 * A one-line progress bar on standard error, redrawn in place. It draws only on a terminal: piped or captured
 * stderr gets nothing, so logs and tests never see carriage returns.
 */
import type { CliIo } from "./cli-io.js";

/** A progress bar (or a silent stand-in when standard error is not a terminal). */
export interface ProgressBar {
  /** Shows `done` of the total with an optional label; redraws at most once per whole percent. */
  update(done: number, label?: string): void;
  /** Clears the line. */
  finish(): void;
}

const WIDTH = 30;

const SILENT: ProgressBar = Object.freeze({ update: () => undefined, finish: () => undefined });

/** A bar for `total` units on `io`'s standard error; silent unless `show` and standard error is a terminal. */
export function progressBar(io: CliIo, total: number, show: boolean): ProgressBar {
  if (!show || !io.errIsTTY || total <= 0) return SILENT;
  let shown = -1;
  let shownLabel = "";
  return {
    update(done, label = "") {
      const percent = Math.min(100, Math.floor((done / total) * 100));
      if (percent === shown && label === shownLabel) return;
      shown = percent;
      shownLabel = label;
      const filled = Math.round((percent / 100) * WIDTH);
      io.err(
        `\r[${"#".repeat(filled)}${".".repeat(WIDTH - filled)}] ${String(percent).padStart(3)}% ${label}\x1b[K`,
      );
    },
    finish() {
      if (shown >= 0) io.err("\r\x1b[K");
    },
  };
}
