import { describe, expect, it } from "vitest";
import type { ToolCallPart } from "../../log/message.js";
import { callLabel, outcomeOf } from "./call-outcome.js";

const call = (name: string, args: string): ToolCallPart => ({ type: "tool_call", callId: "c1", name, args });

describe("callLabel", () => {
  it("shows the main argument first, whitespace collapsed, cut to 40 characters", () => {
    const edit = call(
      "bash",
      JSON.stringify({ command: "edit 287:295\n    required_elements = [\n  'Rows'\n]" }),
    );
    // The first line alone ("edit 287:295") would not tell one edit of those lines from another.
    expect(callLabel(edit)).toBe("bash(edit 287:295 required_elements = [ 'Row…)");
    expect(callLabel(call("bash", '{"command":"ls -la"}'))).toBe("bash(ls -la)");
  });

  it("puts a main argument that is not the first key first, with its key; other arguments shortened", () => {
    const flights = call(
      "update_reservation_flights",
      JSON.stringify({ count: 2, reservation_id: "XEWRD9", flights: [{ flight_number: "HAT030" }] }),
    );
    expect(callLabel(flights)).toBe(
      'update_reservation_flights(reservation_id=XEWRD9, count=2, flights=[{"flight_number":"HAT0…)',
    );
  });

  it("shows arguments that are not a JSON object as their raw text", () => {
    expect(callLabel(call("run", "not json\n  at all"))).toBe("run(not json at all)");
    expect(callLabel(call("run", "[1, 2]"))).toBe("run([1, 2])");
  });
});

describe("outcomeOf", () => {
  it("reports the exit code, the exception and the test line of a failed run", () => {
    const out = outcomeOf(
      "<returncode>2</returncode>\nTraceback (most recent call last):\nKeyError: 'x'\n1 failed",
    );
    expect(out).toEqual({ text: "error: exit 2: KeyError: 'x'; 1 failed", failed: true, tested: true });
    expect(outcomeOf("all good\nmore").text).toBe("all good");
  });
});
