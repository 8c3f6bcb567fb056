/**
 * Writes docs/CONFIG.md, the configuration reference, from the zod schemas that validate a pipeline config (each
 * option's type, default and description come from the schema and its `.meta()`), so the reference cannot drift
 * from what the library accepts. `npm run docs:config` writes it; `--check` exits 1 when the file is stale
 * (test/config-reference.test.ts does the same check).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { BUILT_IN_STRATEGY_OPTIONS, pipelineConfigSchema } from "../src/compaction/pipeline-config.js";
import { hardFallbackOptionsSchema } from "../src/strategies/hard-fallback.js";
import { toolPolicySchema } from "../src/strategies/tool-policy.js";
import { windowTriggerSchema } from "../src/strategies/window-trigger.js";
import { tokenBudgetOptionsSchema } from "../src/tokens/token-budget.js";

type Node = Readonly<Record<string, unknown>>;

/** One row of an options table. */
interface Row {
  readonly path: string;
  readonly type: string;
  readonly fallback: string;
  readonly description: string;
}

const jsonSchema = (schema: z.ZodType): Node => z.toJSONSchema(schema, { io: "input" }) as Node;

/** A node without the annotations a use site adds, to recognise a shape wherever it is used. */
function bare(node: Node): string {
  const { description: _d, default: _f, defaultText: _t, readOnly: _r, $schema: _s, ...rest } = node;
  return JSON.stringify(rest);
}

const TOP = jsonSchema(pipelineConfigSchema).properties as Readonly<Record<string, Node>>;

/** Shapes used in several places or long: documented once in their own section and linked from each use. */
const SHAPES: ReadonlyArray<{ readonly key: string; readonly link: string }> = [
  { key: bare(TOP.summarizer as Node), link: "[summarizer](#summarizer)" },
  { key: bare(TOP.strategies as Node), link: "array of [strategy entries](#strategies)" },
  { key: bare(jsonSchema(toolPolicySchema)), link: "[ToolPolicy](#toolpolicy)" },
  { key: bare(jsonSchema(windowTriggerSchema)), link: "[WindowTrigger](#windowtrigger)" },
  { key: bare(jsonSchema(hardFallbackOptionsSchema)), link: "the options of [hardFallback](#hardfallback)" },
  { key: bare(jsonSchema(tokenBudgetOptionsSchema)), link: "[budget options](#budget)" },
];

const shapeLink = (node: Node): string | undefined => SHAPES.find((s) => s.key === bare(node))?.link;
const code = (value: unknown): string => `\`${typeof value === "string" ? value : JSON.stringify(value)}\``;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function numberType(node: Node): string {
  const name = node.type === "integer" ? "integer" : "number";
  const low =
    typeof node.exclusiveMinimum === "number"
      ? { v: node.exclusiveMinimum, open: true }
      : typeof node.minimum === "number"
        ? { v: node.minimum, open: false }
        : undefined;
  const high =
    typeof node.exclusiveMaximum === "number"
      ? { v: node.exclusiveMaximum, open: true }
      : typeof node.maximum === "number" && node.maximum !== MAX_SAFE
        ? { v: node.maximum, open: false }
        : undefined;
  if (low !== undefined && high !== undefined) {
    return `${name} in ${low.open ? "(" : "["}${low.v}, ${high.v}${high.open ? ")" : "]"}`;
  }
  if (low !== undefined) return `${name} ${low.open ? ">" : "≥"} ${low.v}`;
  if (high !== undefined) return `${name} ${high.open ? "<" : "≤"} ${high.v}`;
  return name;
}

/** The type column: what values the option takes, in words. */
function typeOf(node: Node): string {
  const link = shapeLink(node);
  if (link !== undefined) return link;
  const variants = (node.anyOf ?? node.oneOf) as Node[] | undefined;
  if (variants !== undefined) return variants.map(typeOf).join(" or ");
  if (node.const !== undefined) return code(node.const);
  if (Array.isArray(node.enum)) return node.enum.map(code).join(" or ");
  if (node.type === "integer" || node.type === "number") return numberType(node);
  if (node.type === "string") return node.format === "uri" ? "URL" : "string";
  if (node.type === "boolean") return "boolean";
  if (node.type === "null") return "`null`";
  if (node.type === "array") return `array of ${typeOf(node.items as Node)}`;
  if (
    node.type === "object" &&
    node.properties === undefined &&
    typeof node.additionalProperties === "object"
  ) {
    return `map of name → ${typeOf(node.additionalProperties as Node)}`;
  }
  if (node.type === "object") return "object";
  throw new Error(`config reference: no words for the schema ${JSON.stringify(node)}`);
}

/** The object a node describes or holds among its variants (`false` or an object), unless it is a linked shape. */
function nestedObject(node: Node): Node | undefined {
  if (shapeLink(node) !== undefined) return undefined;
  if (node.type === "object" && node.properties !== undefined) return node;
  const variants = (node.anyOf ?? node.oneOf) as Node[] | undefined;
  return variants?.find(
    (v) => v.type === "object" && v.properties !== undefined && shapeLink(v) === undefined,
  );
}

/** Rows for an object's properties, nested objects flattened to dotted paths. */
function rowsOf(object: Node, prefix = ""): Row[] {
  const required = new Set((object.required as string[] | undefined) ?? []);
  const rows: Row[] = [];
  for (const [key, value] of Object.entries((object.properties ?? {}) as Record<string, Node>)) {
    const path = `${prefix}${key}`;
    const description = value.description;
    if (typeof description !== "string" || description === "") {
      throw new Error(`config reference: option ${path} has no description (add .meta({ description }))`);
    }
    const fallback =
      value.default !== undefined
        ? code(value.default)
        : typeof value.defaultText === "string"
          ? value.defaultText
          : required.has(key)
            ? "**required**"
            : undefined;
    if (fallback === undefined) {
      throw new Error(`config reference: option ${path} says neither its default nor that it is required`);
    }
    rows.push({ path, type: typeOf(value), fallback, description });
    const nested = nestedObject(value);
    if (nested !== undefined) rows.push(...rowsOf(nested, `${path}.`));
  }
  return rows;
}

const cell = (text: string): string => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function table(rows: ReadonlyArray<Row>): string {
  const lines = ["| Option | Type | Default | Description |", "| --- | --- | --- | --- |"];
  for (const r of rows) {
    lines.push(`| \`${r.path}\` | ${cell(r.type)} | ${cell(r.fallback)} | ${cell(r.description)} |`);
  }
  return lines.join("\n");
}

function summarizerSection(): string {
  const node = TOP.summarizer as Node;
  const variants = (node.oneOf ?? node.anyOf) as Node[];
  return variants
    .map((variant) => {
      const kind = ((variant.properties as Record<string, Node>).kind as Node).const;
      return `### \`kind: ${kind}\`\n\n${table(rowsOf(variant))}`;
    })
    .join("\n\n");
}

function strategySections(): string {
  return Object.entries(BUILT_IN_STRATEGY_OPTIONS)
    .map(([use, schema]) => {
      const node = jsonSchema(schema);
      return `### ${use}\n\n${String(node.description)}\n\n${table(rowsOf(node))}`;
    })
    .join("\n\n");
}

/** The whole reference, as Markdown. */
export function renderConfigReference(): string {
  const top = rowsOf(jsonSchema(pipelineConfigSchema)).filter((r) => !r.path.startsWith("summarizer."));
  const budget = rowsOf(jsonSchema(tokenBudgetOptionsSchema));
  return `${[
    "# Configuration reference",
    "<!-- Generated by `npm run docs:config` (scripts/config-reference.ts) from the zod schemas; do not edit by hand. -->",
    "A pipeline config is the object `pipelineFromConfig(config)` takes, the file `loadPipelineConfig(path)` reads " +
      "(YAML or JSON) and what `createContextEngine({ pipeline })` accepts. Every value is checked when it is loaded: " +
      "a wrong type, a value out of range or an unknown key (a typo) is a `ValidationError` naming the field, e.g. " +
      "`strategies[1].keepGroups`. A commented example: [examples/compaction.yaml](../examples/compaction.yaml).",
    "```yaml\nbudget: { model: gpt-4o }\nstrategies:\n  - use: toolResultRetention\n    default: { keepTurns: 3 }\n" +
      "    tools: { read_file: { keepLast: 2 } }\n  - use: slidingWindow\n    keepGroups: 40\n" +
      "  - use: summarize\n    target: 12\nsummarizer: { kind: extractive }\n```",
    "Words such as group, turn, protected core and durability class are explained in [GLOSSARY.md](GLOSSARY.md).",
    "## Pipeline config",
    table(top),
    "## budget",
    "The token budget: here, as the engine's `budget` option, or as `prepareTurn`'s. Those two also take a plain " +
      "number (the request has at most that many tokens) or a ready `TokenBudget`.",
    table(budget),
    "## summarizer",
    "API keys never live in a config file: a model summarizer reads its key from the environment variable " +
      "`apiKeyEnv` names.",
    summarizerSection(),
    "## Strategies",
    "Each entry of `strategies` names a built-in strategy with `use` and gives its options beside it " +
      "(`{ use: slidingWindow, keepGroups: 40 }`). Free strategies cost no model call and run on every turn; model " +
      "strategies run only while the request is over its target, in the background when the summarizer calls a model.",
    strategySections(),
    "## Shared shapes",
    "### ToolPolicy",
    "How long one tool's results stay verbatim. A result expires when any limit says so; the defaults are the " +
      "built-in policy, and each level (`default`, `tools`, `durability`) overrides the one before field by field.",
    table(rowsOf(jsonSchema(toolPolicySchema))),
    "### WindowTrigger",
    "When a strategy looks at the history at all: it fires when any given limit is exceeded. Leave it out to " +
      "evaluate on every run; an empty trigger is refused, since it could never fire.",
    table(rowsOf(jsonSchema(windowTriggerSchema))),
  ].join("\n\n")}\n`;
}

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
/** Where the reference lives in the repository. */
export const CONFIG_REFERENCE_PATH = join(ROOT, "docs", "CONFIG.md");

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = renderConfigReference();
  if (process.argv.includes("--check")) {
    const current = readFileSync(CONFIG_REFERENCE_PATH, "utf8");
    if (current !== text) {
      console.error("docs/CONFIG.md is out of date: run npm run docs:config");
      process.exit(1);
    }
  } else {
    writeFileSync(CONFIG_REFERENCE_PATH, text);
    console.log(`wrote ${CONFIG_REFERENCE_PATH}`);
  }
}
