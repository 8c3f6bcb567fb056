// The audit report: one self-contained HTML file per thread (`context-ledger report`). Loaded only by the
// command that writes it, so the CLI's start-up does not pay for it.
export type {
  ReportAction,
  ReportCall,
  ReportData,
  ReportMessage,
  ReportPlan,
  ReportRequestMessage,
  ReportSource,
} from "./report-data.js";
export { gatherReport, partsText } from "./report-data.js";
export { escapeHtml, reportHtml, scriptSafeJson } from "./report-html.js";
export type { WrittenReport } from "./write-report.js";
export { checkWritable, writeReport } from "./write-report.js";
