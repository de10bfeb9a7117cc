// The standalone agent's own bounds (docs/agent.md, "Connections" and
// "Listening beyond loopback"): clients that send a request slowly hold a
// slot no longer than silent ones; it listens on 127.0.0.1 unless told
// otherwise, says so when it is told otherwise without a token, and takes
// an optional bearer token for /mcp.  The real agent on loopback, raw
// sockets for the slow clients, the MCP SDK client for the rest.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { startAgent, agentBin, connectClient, sleep } from './harness.mjs';

const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
const SLOTS = 256;		// the agent's connection limit (http.c)
const DEADLINE = 30;		// REQUEST_DEADLINE_S (http.c)

// A connection that sends head, then one byte of more every `every` ms,
// never finishing.  Resolves once connected; .closed says when the
// server let it go.
function trickle(port, head, more, every = 3000) {
  return new Promise((res) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    let i = 0;
    let timer = null;
    s.closedAt = null;
    s.on('connect', () => {
      s.write(head);
      timer = setInterval(() => { if (!s.destroyed) s.write(more[i++ % more.length]); }, every);
      res(s);
    });
    s.on('error', () => {});
    s.on('close', () => { s.closedAt = Date.now(); clearInterval(timer); });
    s.stop = () => { clearInterval(timer); s.destroy(); };
  });
}

// A POST /mcp whose body (declared 64 KiB) comes a byte at a time.
const slowBody = 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
  + 'Accept: application/json, text/event-stream\r\nContent-Length: 65536\r\n\r\n{"jsonrpc":"2.0",';

// A ping with a deadline: the answer's status, or 'timeout'.
async function pingWithin(agent, ms) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), ms);
  try {
    const res = await fetch(`${agent.baseUrl}/mcp`, {
      method: 'POST', body: ping, signal: ac.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    });
    await res.text();
    return res.status;
  } catch {
    return 'timeout';
  } finally {
    clearTimeout(t);
  }
}

describe('slow requests', () => {
  let agent;
  let port;
  const socks = [];
  before(async () => {
    agent = await startAgent({ env: { VIVARIUM_WARM: '0' } });
    port = Number(new URL(agent.baseUrl).port);
  });
  after(async () => {
    for (const s of socks) s.stop();
    await agent.stop();
  });

  test('every slot held by a slowly sent body: /mcp still answers, and each is cut at the deadline', async () => {
    const t0 = Date.now();
    // One at a time, so each head is in (and, before the fix, the
    // connection trusted) before the next one comes; until every slot
    // is taken, or as many more tried as the agent may be making room.
    const open = () => socks.filter((s) => s.closedAt === null).length;
    for (let i = 0; i < SLOTS + 64 && open() < SLOTS; i++) {
      socks.push(await trickle(port, slowBody, ['"', 'i', 'd', '"', ':', '1', ',']));
      await sleep(5);
    }
    await sleep(500);
    const held = socks.filter((s) => s.closedAt === null).length;
    assert.ok(held >= SLOTS - 20, `most slow bodies are held at first (${held})`);
    // A client that speaks gets in at once: the slowest of them made room.
    const status = await pingWithin(agent, 5000);
    assert.equal(status, 200, `a ping with ${held} slow bodies open: ${status}`);
    // And none outlives the deadline (plus the watch's second and slack).
    const until = t0 + (DEADLINE + 12) * 1000;
    while (Date.now() < until && socks.some((s) => s.closedAt === null)) await sleep(500);
    const left = socks.filter((s) => s.closedAt === null).length;
    assert.equal(left, 0, `${left} slow bodies still open ${Math.round((Date.now() - t0) / 1000)}s on`);
    assert.match(agent.stderr(), /a request's body was not in within 30s/);
    assert.equal(await pingWithin(agent, 5000), 200);
  });

  test('a head sent a byte at a time is cut at the deadline, while the agent is otherwise idle', async () => {
    const t0 = Date.now();
    const s = await trickle(port, 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', ['a', 'b', 'c'], 2000);
    socks.push(s);
    while (Date.now() - t0 < (DEADLINE + 12) * 1000 && s.closedAt === null) await sleep(500);
    assert.notEqual(s.closedAt, null, 'the slow head is still open');
    const took = (s.closedAt - t0) / 1000;
    assert.ok(took >= DEADLINE - 1, `cut after ${took}s, not before the deadline`);
    assert.match(agent.stderr(), /a request's head was not in within 30s/);
  });
});

describe('where the agent listens', () => {
  test('VIVARIUM_HOST unset: 127.0.0.1 only (another loopback address is refused)', async () => {
    const agent = await startAgent({ env: { VIVARIUM_HOST: '' } });
    try {
      const u = new URL(agent.baseUrl);
      assert.equal(u.hostname, '127.0.0.1');
      assert.equal((await agent.get('/health')).status, 200);
      const err = await new Promise((res) => {
        const s = net.connect({ port: Number(u.port), host: '127.0.0.2' });
        s.on('connect', () => { s.destroy(); res(null); });
        s.on('error', (e) => res(e.code));
      });
      assert.equal(err, 'ECONNREFUSED', 'not listening on every address');
    } finally {
      await agent.stop();
    }
  });

  // -n checks the configuration without listening anywhere.
  function check(env) {
    const ws = mkdtempSync(join(tmpdir(), 'vivarium-e2e-limits-'));
    try {
      const r = spawnSync(agentBin, ['-n'], {
        env: { ...process.env, VIVARIUM_WORKDIR: ws, VIVARIUM_PORT: '8000', VIVARIUM_WARM: '0', ...env },
        encoding: 'utf8', timeout: 10000,
      });
      return { status: r.status, out: r.stdout, err: r.stderr };
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  }
  const token = randomBytes(32).toString('hex');

  test('beyond loopback with no token: a warning that says what to do', () => {
    for (const host of ['0.0.0.0', '::']) {
      const r = check({ VIVARIUM_HOST: host });
      assert.equal(r.status, 0, r.err);
      assert.match(r.out, /warning +the TCP listener \(VIVARIUM_HOST\) is reachable beyond loopback with no token/, host);
      assert.match(r.out, /VIVARIUM_AGENT_TOKEN/);
    }
    for (const env of [{ VIVARIUM_HOST: '' }, { VIVARIUM_HOST: '127.0.0.1' }, { VIVARIUM_HOST: '::1' },
      { VIVARIUM_HOST: '0.0.0.0', VIVARIUM_AGENT_TOKEN: token }]) {
      const r = check(env);
      assert.equal(r.status, 0, r.err);
      assert.doesNotMatch(r.out, /warning/, JSON.stringify(env));
    }
    assert.match(check({ VIVARIUM_HOST: '' }).out, /tcp +127\.0\.0\.1:8000/);
    assert.match(check({ VIVARIUM_HOST: '0.0.0.0', VIVARIUM_AGENT_TOKEN: token }).out, /tcp token +set/);
  });

  test('bad tokens stop the start, naming the variable and not the value', () => {
    const short = 'x'.repeat(20);
    let r = check({ VIVARIUM_AGENT_TOKEN: short });
    assert.equal(r.status, 1);
    assert.match(r.err, /VIVARIUM_AGENT_TOKEN: 20 characters; expected 32 to 128/);
    assert.ok(!r.err.includes(short));
    r = check({ VIVARIUM_AGENT_TOKEN: token, VIVARIUM_AGENT_SECRET: randomBytes(32).toString('hex') });
    assert.equal(r.status, 1);
    assert.match(r.err, /VIVARIUM_AGENT_SECRET and VIVARIUM_AGENT_TOKEN are both set/);
    r = check({ VIVARIUM_AGENT_TOKEN: token, VIVARIUM_PORT: 'off', VIVARIUM_SOCKET: '/tmp/x.sock' });
    assert.equal(r.status, 1);
    assert.match(r.err, /VIVARIUM_AGENT_TOKEN guards the TCP listener/);
    assert.ok(!r.err.includes(token));
  });
});

describe('VIVARIUM_AGENT_TOKEN', () => {
  const token = randomBytes(32).toString('hex');
  let agent;
  before(async () => { agent = await startAgent({ env: { VIVARIUM_AGENT_TOKEN: token, VIVARIUM_WARM: '0' } }); });
  after(async () => { await agent.stop(); });

  test('/mcp without it, or with a wrong one: 401 that names the variable', async () => {
    for (const headers of [{}, { authorization: `Bearer ${token.slice(0, -1)}x` }, { authorization: token }]) {
      const r = await agent.post(ping, { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      assert.match(r.json.error.message, /Unauthorized: this agent needs Authorization: Bearer <its VIVARIUM_AGENT_TOKEN>/);
      assert.ok(!r.text.includes(token));
    }
    assert.ok(!agent.stderr().includes(token), 'the token is never logged');
    assert.match(agent.stderr(), /not the agent token \(VIVARIUM_AGENT_TOKEN\)/);
  });

  test('with it: the SDK client works; /health and link pages need none', async () => {
    const client = await connectClient(agent.mcpUrl,
      { headers: { Authorization: `Bearer ${token}` }, name: 'vivarium-e2e-limits' });
    try {
      const r = await client.callTool({ name: 'upload_link', arguments: {} });
      assert.equal(r.isError, false);
      const page = await fetch(r.structuredContent.url);
      assert.equal(page.status, 200, 'an upload link opens in a browser, which has no token');
      assert.match(await page.text(), /Upload files/);
    } finally {
      await client.close();
    }
    assert.equal((await agent.get('/health')).status, 200);
    assert.equal((await agent.get('/nothing-here')).status, 401);
  });
});
