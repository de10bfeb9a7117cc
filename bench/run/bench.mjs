// bench/run: run_python cold (VIVARIUM_WARM=0: a new python3 per call) vs
// warm (VIVARIUM_WARM=1: forked from the zygote), side by side in one run,
// through the agent's MCP endpoint on a unix socket.  Three cases: print(1)
// on an empty namespace; print(df.shape) with `pd` and a 10,000-row
// DataFrame restored from the namespace; print(1) with pd, np, plt and that
// frame in the namespace (cold, the runner imports the three as it
// restores them).  Each with the target ratio (issue 27).  Calls
// alternate between the two agents so both see the same machine load.  The
// first call of each agent is shown apart and not counted in the medians
// (the warm agent starts its zygote when it starts: that call is warm when
// the zygote is ready by then).  ROUNDS=N (default 15; 1 with
// VIVARIUM_BENCH_SHORT=1, the short mode make test runs).
//
// Every measured call comes GAP_MS (default 150) after the one before it,
// on either agent: a model's calls are seconds apart, and the warm agent
// makes the next run's process between calls, once a run has ended (~25 ms
// on these machines).  GAP_MS=0 measures calls back to back, where a warm
// call waits for that process instead.
import { startAgent, median } from '../../tests/e2e/harness.mjs';

const SHORT = process.env.VIVARIUM_BENCH_SHORT === '1';
const ROUNDS = Number(process.env.ROUNDS || (SHORT ? 1 : 15));
const GAP_MS = Number(process.env.GAP_MS ?? 150);
const pause = () => new Promise((r) => setTimeout(r, GAP_MS));

let id = 0;
async function call(agent, code) {
  const body = JSON.stringify({
    jsonrpc: '2.0', id: ++id, method: 'tools/call',
    params: { name: 'run_python', arguments: { code } },
  });
  const t0 = process.hrtime.bigint();
  const r = await agent.post(body);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const res = r.json && r.json.result;
  if (r.status !== 200 || !res || res.isError) throw new Error(`call failed: ${r.text.slice(0, 500)}`);
  return ms;
}

const FRAME = "df = pd.DataFrame({'a': range(10000), 'b': [x * 0.5 for x in range(10000)], 'c': ['x%d' % (x % 97) for x in range(10000)]})";
const cases = [
  { name: 'print(1)', setup: null, code: 'print(1)', target: 3 },
  {
    name: 'print(df.shape), pd + 10k-row df restored',
    setup: `import pandas as pd\n${FRAME}`,
    code: 'print(df.shape)',
    target: 20,
  },
  {
    name: 'print(1), pd/np/plt + 10k-row df in ns',
    setup: `import pandas as pd, numpy as np, matplotlib.pyplot as plt\n${FRAME}`,
    code: 'print(1)',
    target: 40,
  },
];

const agents = {
  cold: await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '0' } }),
  warm: await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1' } }),
};
try {
  console.log(`bench-run: ${ROUNDS} rounds per case, cold and warm alternating, ${GAP_MS} ms between calls; ` +
    'wall time of the HTTP call (ms)' +
    (SHORT ? '; SHORT mode: the figures only show that it runs' : ''));
  console.log('case'.padEnd(44) + 'cold median'.padStart(12) + 'warm median'.padStart(12) + 'cold/warm'.padStart(11) + 'target'.padStart(8));
  const first = { cold: await call(agents.cold, 'pass'), warm: await call(agents.warm, 'pass') };
  console.log('first call (either agent)'.padEnd(44) + first.cold.toFixed(1).padStart(12) +
    first.warm.toFixed(1).padStart(12));
  // Until the zygote has imported, runs go cold: wait for a warm one.
  const t0 = Date.now();
  for (;;) {
    const r = await agents.warm.post(JSON.stringify({
      jsonrpc: '2.0', id: ++id, method: 'tools/call',
      params: { name: 'run_python', arguments: { code: 'import os; print(os.getppid())' } },
    }));
    if (!r.text.includes(`\\n${agents.warm.proc.pid}\\n`)) break;
    if (Date.now() - t0 > 60000) throw new Error('the zygote never got ready');
    await new Promise((res) => setTimeout(res, 100));
  }
  console.log(`zygote ready about ${Date.now() - t0} ms after the first call's end`);
  for (const c of cases) {
    for (const a of Object.values(agents)) {
      if (c.setup) await call(a, c.setup);
      await call(a, c.code);
    }
    const t = { cold: [], warm: [] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const k of i % 2 ? ['warm', 'cold'] : ['cold', 'warm']) {
        await pause();
        t[k].push(await call(agents[k], c.code));
      }
    }
    const mc = median(t.cold);
    const mw = median(t.warm);
    console.log(c.name.padEnd(44) + mc.toFixed(1).padStart(12) + mw.toFixed(1).padStart(12) +
      `${(mc / mw).toFixed(1)}x`.padStart(11) + `${c.target}x`.padStart(8) + (mc / mw >= c.target ? '' : '  (below target)'));
  }
} finally {
  await agents.cold.stop();
  await agents.warm.stop();
}
