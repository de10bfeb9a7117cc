// Long runs against the agent directly (make test-agent): stop, progress,
// background jobs, with the SDK client.  The cases are in longrun-cases.mjs;
// tests/supervisor/longrun.test.mjs runs them through the supervisor.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgent, makeFetch, replyOf } from './harness.mjs';
import { defineLongRunTests } from './longrun-cases.mjs';

let agent;

before(async () => {
  agent = await startAgent({
    transport: 'unix',
    env: { VIVARIUM_PYTHON: process.env.VIVARIUM_PYTHON || 'python3' },
  });
});

after(async () => {
  if (agent) assert.equal(await agent.stop(), 0);
});

defineLongRunTests(test, {
  label: 'agent',
  connect: () => agent.connect(),
  // A connection of its own each time, so that aborting one drops it.
  post: async (msg, { signal } = {}) => {
    const f = makeFetch(agent.socketPath);
    try {
      const res = await f(`${agent.baseUrl}/mcp`, {
        method: 'POST', signal, body: JSON.stringify(msg),
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      });
      return replyOf(res);
    } finally {
      f.close().catch(() => {});
    }
  },
});

test('agent: the log says why each stopped run stopped', () => {
  const log = agent.stderr();
  assert.match(log, /stopped after [\d.]+ s \(cancelled by the client\)/);
  assert.match(log, /request 4242 cancelled by the client/);
});

test('agent: a background job still running when the agent stops is stopped with it', async () => {
  const a = await startAgent({ transport: 'tcp' });
  const c = await a.connect();
  const r = await c.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(60)', background: true } });
  assert.equal(r.structuredContent.state, 'running');
  const t0 = Date.now();
  assert.equal(await a.stop(), 0);
  assert.ok(Date.now() - t0 < 5000, `the agent took ${Date.now() - t0} ms to stop`);
});
