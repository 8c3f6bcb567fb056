/**
 * docs/CONFIG.md is what the generator makes of the schemas today (a schema changed without `npm run docs:config`
 * fails here), and it documents every strategy a config may `use` and every option each one's schema accepts,
 * found by walking the zod schemas themselves rather than the generator's JSON Schema.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { CONFIG_REFERENCE_PATH, renderConfigReference } from "../scripts/config-reference.js";
import {
  BUILT_IN_STRATEGY_OPTIONS,
  pipelineConfigSchema,
  pipelineFromConfig,
} from "../src/compaction/pipeline-config.js";
import { toolPolicySchema } from "../src/strategies/tool-policy.js";
import { windowTriggerSchema } from "../src/strategies/window-trigger.js";
import { tokenBudgetOptionsSchema } from "../src/tokens/token-budget.js";

const reference = readFileSync(CONFIG_REFERENCE_PATH, "utf8");

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly shape?: Readonly<Record<string, z.ZodType>>;
}
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The option names an object schema accepts, looking through readonly / optional / nullable wrappers. */
function optionNames(schema: z.ZodType): string[] {
  let def = defOf(schema);
  while (def.innerType !== undefined && def.type !== "object") def = defOf(def.innerType);
  if (def.type !== "object" || def.shape === undefined) throw new Error(`not an object schema: ${def.type}`);
  return Object.keys(def.shape);
}

/** The text of the section under `heading`, up to the next heading of any level. */
function section(heading: string): string {
  const start = reference.indexOf(`\n${heading}\n`);
  expect(start, `section ${heading}`).toBeGreaterThanOrEqual(0);
  const rest = reference.slice(start + heading.length + 2);
  const end = rest.search(/\n#{2,3} /);
  return end === -1 ? rest : rest.slice(0, end);
}

const documents = (text: string, name: string) => text.includes(`| \`${name}\` |`);

describe("docs/CONFIG.md", () => {
  it("is what npm run docs:config generates from the schemas today", () => {
    expect(reference).toBe(renderConfigReference());
  });

  it("has a section for every strategy a config can use", () => {
    const error = (() => {
      try {
        pipelineFromConfig({ strategies: [{ use: "noSuchStrategy" }] });
      } catch (e) {
        return String(e);
      }
      return "";
    })();
    const known = /known: ([^)]*)\)/.exec(error)?.[1]?.split(", ") ?? [];
    expect(known.length).toBeGreaterThan(5);
    expect(Object.keys(BUILT_IN_STRATEGY_OPTIONS).sort()).toEqual([...known].sort());
    for (const use of known) expect(reference).toContain(`\n### ${use}\n`);
  });

  it("documents every option of every strategy, of the config itself, of the budget and of the shared shapes", () => {
    const cases: Array<[string, z.ZodType]> = [
      ...Object.entries(BUILT_IN_STRATEGY_OPTIONS).map(([use, schema]): [string, z.ZodType] => [
        `### ${use}`,
        schema,
      ]),
      ["## Pipeline config", pipelineConfigSchema],
      ["## budget", tokenBudgetOptionsSchema],
      ["### ToolPolicy", toolPolicySchema],
      ["### WindowTrigger", windowTriggerSchema],
    ];
    let checked = 0;
    for (const [heading, schema] of cases) {
      const text = section(heading);
      for (const name of optionNames(schema)) {
        expect(documents(text, name), `${heading}: option ${name}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(60);
  });

  it("gives every option row a type, a default (or says it is required) and a description", () => {
    const rows = reference.split("\n").filter((line) => /^\| `[^`]+` \|/.test(line));
    expect(rows.length).toBeGreaterThan(60);
    for (const row of rows) {
      const cells = row
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim());
      expect(cells, row).toHaveLength(4);
      for (const c of cells) expect(c, row).not.toBe("");
    }
  });
});
