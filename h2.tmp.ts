import { runAgentHarness } from "./examples/agent-harness.js";
const tot = { made: 0, honoured: 0, honourable: 0, fail: 0, rej: 0, twice: 0 } as Record<string, number>;
const ch: Record<string, [number, number]> = {};
const held: Record<string, number> = {};
for (let seed = 1; seed <= 16; seed++) {
  const r = await runAgentHarness({ turns: 320, seed, replayEvery: 20 });
  const x = r.references as any;
  tot.made += x.made; tot.honoured += x.honoured; tot.honourable += x.honourable; tot.fail += x.failures.length; tot.rej += r.rejections.length; tot.twice += x.rehydratedAfterRecall;
  for (const [k, v] of Object.entries(x.byChannel as Record<string, any>)) { ch[k] ??= [0, 0]; ch[k][0] += v.honoured; ch[k][1] += v.made; }
  for (const [k, v] of Object.entries((x.outcomes ?? {}) as Record<string, number>)) held[k] = (held[k] ?? 0) + v;
}
console.log(JSON.stringify({ tot, ch, held }));
