import { describe, expect, it } from "vitest";
import type { ProviderFormat } from "./provider-rules.js";
import { RECALL_LIMIT_MAX, RECALL_TOOL, recallTool } from "./recall-tool.js";

const FORMATS: ReadonlyArray<ProviderFormat> = ["openai", "responses", "anthropic"];

/** The JSON Schema a format's definition carries, wherever the format puts it. */
function schemaOf(format: ProviderFormat): Record<string, unknown> {
  const tool = recallTool(format) as unknown as Record<string, Record<string, unknown>>;
  if (format === "openai") return tool.function!.parameters as Record<string, unknown>;
  if (format === "responses") return tool.parameters!;
  return tool.input_schema!;
}

describe("recallTool", () => {
  it("has each provider's shape", () => {
    const openai = recallTool("openai");
    expect(Object.keys(openai).sort()).toEqual(["function", "type"]);
    expect(openai.type).toBe("function");
    expect(Object.keys(openai.function).sort()).toEqual(["description", "name", "parameters"]);
    expect(openai.function.name).toBe("recall");

    const responses = recallTool("responses");
    expect(Object.keys(responses).sort()).toEqual(["description", "name", "parameters", "strict", "type"]);
    expect([responses.type, responses.name, responses.strict]).toEqual(["function", "recall", false]);

    const anthropic = recallTool("anthropic");
    expect(Object.keys(anthropic).sort()).toEqual(["description", "input_schema", "name"]);
    expect(anthropic.name).toBe("recall");
  });

  it.each(FORMATS)(
    "%s: an object schema with artifactId, callId, query and limit, none required",
    (format) => {
      const schema = schemaOf(format);
      expect(schema.type).toBe("object");
      expect(schema.additionalProperties).toBe(false);
      expect(schema.required).toBeUndefined();
      // Providers refuse combinators at the top of a tool's schema; "exactly one" is in the description.
      for (const key of ["oneOf", "anyOf", "allOf", "not"]) expect(schema[key]).toBeUndefined();
      const properties = schema.properties as Record<string, Record<string, unknown>>;
      expect(Object.keys(properties)).toEqual(["artifactId", "callId", "query", "limit"]);
      expect(properties.artifactId!.type).toBe("string");
      expect(properties.callId!.type).toBe("string");
      expect(properties.query!.type).toBe("string");
      expect(properties.limit).toMatchObject({ type: "integer", minimum: 1, maximum: RECALL_LIMIT_MAX });
      for (const property of Object.values(properties))
        expect(String(property.description).length).toBeGreaterThan(20);
    },
  );

  it.each(FORMATS)("%s: describes the three uses and survives a JSON round trip", (format) => {
    const tool = recallTool(format);
    const { description } = format === "openai" ? recallTool("openai").function : recallTool(format);
    expect(description).toContain("artifactId");
    expect(description).toContain("callId");
    expect(description).toContain("query");
    expect(description).toMatch(/exactly one/);
    expect(JSON.parse(JSON.stringify(tool))).toEqual(tool);
  });

  it("is built from RECALL_TOOL, which is frozen through", () => {
    expect(recallTool("anthropic")).toEqual({
      name: RECALL_TOOL.name,
      description: RECALL_TOOL.description,
      input_schema: RECALL_TOOL.parameters,
    });
    expect(Object.isFrozen(RECALL_TOOL.parameters)).toBe(true);
    expect(Object.isFrozen((RECALL_TOOL.parameters as { properties: object }).properties)).toBe(true);
  });
});
