// MCP 2026-07-28 through the supervisor, with real Podman and the sandbox
// image: @modelcontextprotocol/client 2.x pinned to 2026-07-28.  A user's
// very first request is a server/discover (no initialize ever comes);
// routing by header and by path is the same as in the 2025 eras; the
// Mcp-Method and Mcp-Name headers reach the agent (it refuses a request
// without them); and a client that closes its response stream has its run's
// process group killed inside the sandbox.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sleep, textOf, Client2026, Transport2026 } from '../e2e/harness.mjs';
import {
  TOKEN, user, startPodman, startSupervisor, stateDir, cleanup, imagePresent, IMAGE, TAG,
} from './lib.mjs';

const V = '2026-07-28';

const podmanSock = `/run/vsv-${TAG}.podman.sock`;
let podman;
let sv;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  sv = await startSupervisor({ podmanSock, state: stateDir() });
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  if (podman) await podman.stop();
});

async function connect2026(uid, { viaPath = false } = {}) {
  const url = viaPath ? `${sv.base}/u/${uid}/mcp` : `${sv.base}/mcp`;
  const headers = { Authorization: `Bearer ${TOKEN}` };
  if (!viaPath) headers['X-User-ID'] = uid;
  const c = new Client2026({ name: 'vivarium-supervisor-2026', version: '0.0.0' },
    { versionNegotiation: { mode: { pin: V } } });
  await c.connect(new Transport2026(new URL(url), { requestInit: { headers } }));
  return c;
}

const run = (c, code, opts = {}) =>
  c.callTool({ name: 'run_python', arguments: { code, timeout_seconds: 120 } }, { timeout: 180000, ...opts });

const env26 = {
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientCapabilities': {},
};

test('2026-07-28 through the supervisor: discover first, header and path routing, a namespace kept', async () => {
  for (const viaPath of [false, true]) {
    const u = user(viaPath ? 'nv-path' : 'nv-hdr');
    // The first request this user ever makes is server/discover.
    const a = await connect2026(u, { viaPath });
    assert.equal(a.getNegotiatedProtocolVersion(), V);
    assert.ok(a.getDiscoverResult().supportedVersions.includes(V));
    let r = await run(a, `who = ${JSON.stringify(u)}`);
    assert.ok(!r.isError, textOf(r));
    await a.close();
    const b = await connect2026(u, { viaPath });
    r = await run(b, 'print("I am", who)');
    assert.match(textOf(r), new RegExp(`I am ${u}`));
    await b.close();
  }
  // The two users' sandboxes are not one.
  const b = await connect2026(user('nv-hdr'));
  const r = await run(b, 'print(who)');
  assert.match(textOf(r), /nv-hdr/);
  await b.close();

  // On the wire: no session id, resultType, and the headers reach the agent.
  const body = (name) => JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call',
    params: { name, arguments: {}, _meta: env26 } });
  const hd = { 'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'list_files' };
  let raw = await sv.post(body('list_files'), { userId: user('nv-hdr'), headers: hd });
  assert.equal(raw.status, 200, raw.text);
  assert.equal(raw.json.result.resultType, 'complete');
  assert.equal(raw.headers.get('mcp-session-id'), null);
  raw = await sv.post(body('list_files'), { userId: user('nv-hdr'), headers: { ...hd, 'mcp-name': 'run_python' } });
  assert.equal(raw.status, 400, raw.text);
  assert.equal(raw.json.error.code, -32020);
  raw = await sv.post(body('list_files'), { userId: user('nv-hdr'),
    headers: { 'mcp-protocol-version': V, 'mcp-method': 'tools/call' } });
  assert.equal(raw.status, 400, raw.text);
  assert.match(raw.json.error.message, /Mcp-Name/);
});

test('2026-07-28 through the supervisor: closing the stream kills the run in the sandbox', async () => {
  for (const progress of [false, true]) {
    const u = user(progress ? 'nv-cancel-sse' : 'nv-cancel');
    const c = await connect2026(u);
    const ac = new AbortController();
    const code = `import os, subprocess, time
subprocess.Popen(['sleep', '300'])
with open('pgid', 'w') as f:
    f.write(str(os.getpgid(0)))
time.sleep(300)`;
    const p = run(c, code, { signal: ac.signal, ...(progress ? { onprogress: () => {} } : {}) });
    p.catch(() => {});
    // The run has started once its file is there (list_files does not wait
    // for the workspace's run lock).
    const end = Date.now() + 60000;
    for (;;) {
      const l = await c.callTool({ name: 'list_files', arguments: {} });
      if (/pgid/.test(textOf(l))) break;
      assert.ok(Date.now() < end, 'the run did not start');
      await sleep(300);
    }
    await sleep(500);
    const t0 = Date.now();
    ac.abort();
    await assert.rejects(p);
    // The next run gets the workspace only once the first is gone, and then
    // finds none of its process group alive.
    const probe = `import os, signal
pg = int(open('pgid').read())
try:
    os.killpg(pg, 0)
    print('group alive')
except ProcessLookupError:
    print('group gone')`;
    let out = '';
    while (Date.now() - t0 < 30000) {
      out = textOf(await run(c, probe));
      if (/group gone/.test(out)) break;
      await sleep(500);
    }
    assert.match(out, /group gone/, `after ${Date.now() - t0} ms`);
    assert.ok(Date.now() - t0 < 30000);
    await c.close();
  }
});
