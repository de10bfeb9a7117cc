// MCP 2026-07-28 (stateless) against the standalone agent, with the client
// that speaks it: @modelcontextprotocol/client 2.x pinned to 2026-07-28, so
// no fall back to initialize can hide a failure.  Discover, runs whose
// namespace carries over between stateless calls, cancellation by closing
// the response stream (JSON and SSE answers: the run's process group must be
// gone), and the refusals for a bad _meta or bad headers.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, textOf, until, connect2026 } from './harness.mjs';

const V = '2026-07-28';

const connect = (agent) => connect2026(agent.mcpUrl, { fetch: agent.fetch, name: 'vivarium-e2e-2026' });

// Process group pgid still has a live member (zombies are dead, only not
// reaped yet)?
export function groupAlive(pgid) {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let st;
    try { st = readFileSync(`/proc/${d}/stat`, 'utf8'); } catch { continue; }
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    if (Number(f[2]) === pgid && f[0] !== 'Z') return true;
  }
  return false;
}

const waitFor = (cond, ms, what) => until(cond, { ms, what, step: 100 });

// The code of a run that writes its process group to a file and then sleeps
// (in a child too, so that the whole group has to go).
export const sleeper = (file) => `import os, subprocess, time
subprocess.Popen(['sleep', '300'])
with open(${JSON.stringify(file)}, 'w') as f:
    f.write(str(os.getpgid(0)))
time.sleep(300)`;

const env26 = (caps = {}) => ({
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': caps,
});

test('2026-07-28: discover, tools and a namespace across stateless calls', async () => {
  const agent = await startAgent();
  try {
    const client = await connect(agent);
    assert.equal(client.getNegotiatedProtocolVersion(), V);
    const d = client.getDiscoverResult();
    assert.ok(d.supportedVersions.includes(V));
    assert.ok(d.supportedVersions.includes('2025-11-25'));
    assert.ok(d.capabilities.tools);
    assert.match(client.getInstructions(), /run_python/);

    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'run_python'));
    let r = await client.callTool({ name: 'run_python', arguments: { code: 'x = 41\nimport math' } });
    assert.ok(!r.isError, textOf(r));
    // A second client, a second connection: nothing but the workspace links them.
    const other = await connect(agent);
    r = await other.callTool({ name: 'run_python', arguments: { code: 'print(x + 1, math.pi > 3)' } });
    assert.match(textOf(r), /42 True/);
    await other.close();
    await client.close();

    // On the wire: resultType on results, no session id.
    const raw = await agent.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: env26() } }),
      { headers: { 'mcp-protocol-version': V, 'mcp-method': 'tools/list' } });
    assert.equal(raw.status, 200);
    assert.equal(raw.json.result.resultType, 'complete');
    assert.equal(raw.headers.get('mcp-session-id'), null);
  } finally {
    await agent.stop();
  }
});

test('2026-07-28: bad _meta and headers are refused with the spec errors', async () => {
  const agent = await startAgent();
  try {
    const call = (meta, name = 'list_files') => JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name, arguments: {}, _meta: meta } });
    const hdr = (h = {}) => ({ 'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'list_files', ...h });
    const cases = [
      // [what, body, headers, status, code]
      ['capabilities missing', call({ 'io.modelcontextprotocol/protocolVersion': V }), hdr(), 400, -32602],
      ['unknown version', call({ ...env26(), 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }),
        hdr({ 'mcp-protocol-version': '2099-01-01' }), 400, -32022],
      ['header version differs', call(env26()), hdr({ 'mcp-protocol-version': '2025-11-25' }), 400, -32020],
      ['no MCP-Protocol-Version', call(env26()), { 'mcp-method': 'tools/call', 'mcp-name': 'list_files' }, 400, -32020],
      ['no Mcp-Method', call(env26()), { 'mcp-protocol-version': V, 'mcp-name': 'list_files' }, 400, -32020],
      ['Mcp-Method differs', call(env26()), hdr({ 'mcp-method': 'tools/list' }), 400, -32020],
      ['Mcp-Name differs', call(env26()), hdr({ 'mcp-name': 'run_python' }), 400, -32020],
      ['no Mcp-Name', call(env26()), { 'mcp-protocol-version': V, 'mcp-method': 'tools/call' }, 400, -32020],
      ['2026 header, no envelope', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        { 'mcp-protocol-version': V, 'mcp-method': 'tools/list' }, 400, -32602],
      ['ping is gone', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: env26() } }),
        { 'mcp-protocol-version': V, 'mcp-method': 'ping' }, 404, -32601],
    ];
    for (const [what, body, headers, status, code] of cases) {
      const r = await agent.post(body, { headers });
      assert.equal(r.status, status, `${what}: ${r.text}`);
      assert.equal(r.json?.error?.code, code, `${what}: ${r.text}`);
      assert.ok(r.json.error.message.length > 20, what);
    }
    const unk = await agent.post(call({ ...env26(), 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }),
      { headers: hdr({ 'mcp-protocol-version': '2099-01-01' }) });
    assert.ok(unk.json.error.data.supported.includes(V));
    // A tools/call that asks for progress is refused before its stream starts.
    const sse = await agent.post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call',
      params: { name: 'list_files', arguments: {}, _meta: { ...env26(), progressToken: 1 } } }),
      { headers: hdr({ 'mcp-name': 'run_python' }) });
    assert.equal(sse.status, 400, sse.text);
    assert.equal(sse.json.error.code, -32020);

    // initialize asking for 2026-07-28 is the 2025 handshake: the newest
    // version that has one, and a session.
    const init = await agent.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: V, capabilities: {}, clientInfo: { name: 'x', version: '1' } } }));
    assert.equal(init.status, 200);
    assert.equal(init.json.result.protocolVersion, '2025-11-25');
  } finally {
    await agent.stop();
  }
});

// Closing the response stream cancels (2026-07-28): the run and all its
// process group go, for a JSON answer and for an SSE one (progress asked).
for (const progress of [false, true]) {
  test(`2026-07-28: closing the stream kills the run (${progress ? 'SSE' : 'JSON'} answer)`, async () => {
    const agent = await startAgent();
    try {
      const client = await connect(agent);
      const name = `pgid-${progress ? 'sse' : 'json'}`;
      const file = join(agent.workspace, name);
      const ac = new AbortController();
      const p = client.callTool({ name: 'run_python', arguments: { code: sleeper(name), timeout_seconds: 120 } },
        { signal: ac.signal, ...(progress ? { onprogress: () => {} } : {}) });
      p.catch(() => {});
      await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').length > 0, 30000, 'the run to start');
      const pgid = Number(readFileSync(file, 'utf8'));
      assert.ok(pgid > 1 && groupAlive(pgid));
      ac.abort();
      await assert.rejects(p);
      await waitFor(() => !groupAlive(pgid), 15000, `process group ${pgid} to be killed`);
      // The workspace is free again at once.
      const r = await client.callTool({ name: 'run_python', arguments: { code: 'print("after")' } });
      assert.match(textOf(r), /after/);
      await client.close();
    } finally {
      await agent.stop();
    }
  });
}

// The same with nothing but the closing: a raw request, no notification.
test('2026-07-28: a raw request whose connection closes loses its run', async () => {
  const agent = await startAgent();
  try {
    const ac = new AbortController();
    const p = agent.fetch(agent.mcpUrl, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
        'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'run_python' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'r1', method: 'tools/call',
        params: { name: 'run_python', arguments: { code: sleeper('pgid-raw'), timeout_seconds: 120 }, _meta: env26() } }),
    });
    p.catch(() => {});
    const file = join(agent.workspace, 'pgid-raw');
    await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').length > 0, 30000, 'the run to start');
    const pgid = Number(readFileSync(file, 'utf8'));
    assert.ok(groupAlive(pgid));
    ac.abort();
    await waitFor(() => !groupAlive(pgid), 15000, `process group ${pgid} to be killed`);
  } finally {
    await agent.stop();
  }
});
