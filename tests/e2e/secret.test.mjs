// The agent's TCP listener with a per-sandbox secret (VIVARIUM_AGENT_SECRET,
// docs/agent.md "Reached over a network"): what a Pod's agent serves to the
// supervisor, driven with the real MCP SDK client against the real agent on
// loopback.  Every way of not having the secret is a 401; the right one
// serves /mcp and the /_files/ endpoints; runs never see it; bad values
// stop the start with a message that names the variable and not the value.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { startAgent, agentBin, textOf, makeFetch, connectClient, sleep } from './harness.mjs';

const secret = randomBytes(32).toString('hex'); // what the supervisor makes: 64 hex digits

// An SDK client with these headers on every request (not registered with
// the agent, so a failing connect leaves nothing behind).
const sdkClient = (agent, headers) => connectClient(agent.mcpUrl, { headers, name: 'vivarium-e2e-secret' });

// One raw HTTP/1.1 exchange, for what fetch will not send (a header twice).
function rawRequest(port, head) {
  return new Promise((res, rej) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('end', () => res(got));
    s.on('error', rej);
    s.write(head);
  });
}

function assertUnauthorized(r, what) {
  assert.equal(r.status, 401, `${what}: ${r.status} ${r.text}`);
  assert.equal(r.headers.get('www-authenticate'), 'Bearer', what);
  assert.match(r.headers.get('content-type'), /^application\/json/, what);
  const j = JSON.parse(r.text);
  assert.equal(j.jsonrpc, '2.0', what);
  assert.equal(j.id, null, what);
  assert.equal(j.error.code, -32000, what);
  assert.match(j.error.message, /Unauthorized/, what);
  assert.ok(!r.text.includes(secret), `${what}: the answer does not hold the secret`);
}

const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';

describe('TCP with VIVARIUM_AGENT_SECRET', () => {
  let agent;
  let port;
  before(async () => {
    agent = await startAgent({ env: { VIVARIUM_AGENT_SECRET: secret } });
    port = Number(new URL(agent.baseUrl).port);
  });
  after(async () => { await agent.stop(); });

  test('/health is open, GET and HEAD', async () => {
    const h = await agent.get('/health');
    assert.equal(h.status, 200);
    assert.equal(h.text.trim(), 'ok');
    assert.equal((await agent.get('/health', { method: 'HEAD' })).status, 200);
  });

  // common/proof.h, computed here independently of proof.c.
  const proofOf = (key, nonce, addr, p) => createHmac('sha256', key)
    .update(Buffer.concat([Buffer.from('vivarium-agent-proof\0'), Buffer.from(nonce), Buffer.from('\0'), Buffer.from(addr), Buffer.from('\0'), Buffer.from(String(p))]))
    .digest('hex');

  test('/health answers a challenge with the proof that it holds the secret, for the address it was reached at', async () => {
    const nonce = randomBytes(16).toString('hex');
    const h = await agent.get('/health', { headers: { 'x-vivarium-challenge': nonce } });
    assert.equal(h.status, 200, h.text);
    assert.equal(h.headers.get('x-vivarium-proof'), proofOf(secret, nonce, '127.0.0.1', port));
    assert.notEqual(h.headers.get('x-vivarium-proof'), proofOf(secret, nonce, '127.0.0.2', port), 'bound to the address');
    assert.notEqual(h.headers.get('x-vivarium-proof'), proofOf('x'.repeat(64), nonce, '127.0.0.1', port));
    assert.ok(!h.text.includes(secret) && !h.headers.get('x-vivarium-proof').includes(secret));
    // A fresh nonce, a fresh answer; no challenge, no proof (the kubelet's probe).
    const again = await agent.get('/health', { headers: { 'x-vivarium-challenge': randomBytes(16).toString('hex') } });
    assert.notEqual(again.headers.get('x-vivarium-proof'), h.headers.get('x-vivarium-proof'));
    assert.equal((await agent.get('/health')).headers.get('x-vivarium-proof'), null);
    // Malformed or sent twice: 400, no proof.
    for (const bad of ['', 'abc', nonce.toUpperCase(), `${nonce}0`, `${nonce.slice(1)}g`]) {
      const r = await agent.get('/health', { headers: { 'x-vivarium-challenge': bad } });
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.status}`);
      assert.equal(r.headers.get('x-vivarium-proof'), null);
    }
    // The connection stays open: the supervisor's request follows on it.
    const both = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Vivarium-Challenge: ${nonce}\r\n\r\n`
      + `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\n`
      + `Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`);
    assert.match(both, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(both, new RegExp(`X-Vivarium-Proof: ${proofOf(secret, nonce, '127.0.0.1', port)}`, 'i'));
    assert.match(both, /\r\n\r\nok\nHTTP\/1\.1 200 OK\r\n[^]*"result":\{\}/, both);
    const twice = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x\r\nX-Vivarium-Challenge: ${nonce}\r\nX-Vivarium-Challenge: ${nonce}\r\nConnection: close\r\n\r\n`);
    assert.match(twice, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(twice, /x-vivarium-proof/i);
  });

  test('no header, wrong secret, truncated, longer, shorter, another scheme: 401 with a JSON-RPC error', async () => {
    const wrong = secret.slice(0, 10) + (secret[10] === 'a' ? 'b' : 'a') + secret.slice(11);
    const cases = {
      'no header': {},
      'wrong secret of the same length': { authorization: `Bearer ${wrong}` },
      'truncated by one': { authorization: `Bearer ${secret.slice(0, -1)}` },
      'truncated to half': { authorization: `Bearer ${secret.slice(0, 32)}` },
      'one character more': { authorization: `Bearer ${secret}0` },
      'another length altogether': { authorization: `Bearer ${randomBytes(60).toString('hex')}` },
      'empty bearer': { authorization: 'Bearer ' },
      'Basic scheme': { authorization: `Basic ${secret}` },
      'no scheme': { authorization: secret },
    };
    for (const [what, headers] of Object.entries(cases))
      assertUnauthorized(await agent.post(ping, { headers }), what);
    // Not just /mcp: a path that does not exist says nothing without it.
    assertUnauthorized(await agent.post('', { path: '/nowhere', method: 'GET' }), 'GET /nowhere');
    assertUnauthorized(await agent.post('', { path: '/mcp', method: 'GET' }), 'GET /mcp');
  });

  test('the secret sent twice is refused even when both are right', async () => {
    const body = ping;
    const got = await rawRequest(port, `POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${secret}\r\nAuthorization: Bearer ${secret}\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    assert.match(got, /^HTTP\/1\.1 401 /, got);
    assert.match(got, /WWW-Authenticate: Bearer/i, got);
  });

  test('the SDK client without the secret, or with a wrong one, cannot connect', async () => {
    await assert.rejects(sdkClient(agent, {}));
    await assert.rejects(sdkClient(agent, { Authorization: `Bearer ${secret.slice(0, -1)}` }));
  });

  test('with the secret: the SDK client lists tools and run_python works', async () => {
    const client = await sdkClient(agent, { Authorization: `Bearer ${secret}` });
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'run_python'));
      const r = await client.callTool({ name: 'run_python', arguments: { code: 'x = 6 * 7\nprint("answer", x)\nopen("f.txt", "w").write("kept")' } });
      assert.equal(r.isError, false, textOf(r));
      assert.match(textOf(r), /answer 42/);
      const again = await client.callTool({ name: 'run_python', arguments: { code: 'print(x + 1, open("f.txt").read())' } });
      assert.match(textOf(again), /43 kept/);
      const l = await client.callTool({ name: 'list_files', arguments: {} });
      assert.match(textOf(l), /f\.txt/);
    } finally {
      await client.close();
    }
  });

  test('the runner sees the secret nowhere: not os.environ, not /proc/self/environ, not any /proc/*/environ', async () => {
    const client = await sdkClient(agent, { Authorization: `Bearer ${secret}` });
    try {
      const code = [
        'import os, glob',
        `s = ${JSON.stringify(secret)}.encode()`,
        'print("env:", sorted(k for k in os.environ if "SECRET" in k))',
        'print("self:", s in open("/proc/self/environ", "rb").read())',
        'hits, seen = [], 0',
        'for p in glob.glob("/proc/[0-9]*/environ"):',
        '    try:',
        '        b = open(p, "rb").read()',
        '    except OSError:',
        '        continue',
        '    seen += 1',
        '    if s in b:',
        '        hits.append(p)',
        'print("procs:", hits, seen > 1)',
      ].join('\n');
      const r = await client.callTool({ name: 'run_python', arguments: { code } });
      const t = textOf(r);
      assert.match(t, /env: \[\]/, t);
      assert.match(t, /self: False/, t);
      assert.match(t, /procs: \[\] True/, t);
    } finally {
      await client.close();
    }
    // The agent's own environment block was wiped too, not only unset.
    const env = readFileSync(`/proc/${agent.proc.pid}/environ`);
    assert.ok(!env.includes(secret), 'the agent\'s /proc/PID/environ does not hold it');
  });

  test('/_files/ endpoints: 401 without the secret, served with it', async () => {
    writeFileSync(join(agent.workspace, 'data.csv'), 'a,b\n1,2\n');
    const auth = { authorization: `Bearer ${secret}` };
    assertUnauthorized(await agent.post('', { path: '/_files/list', method: 'GET' }), '/_files/list');
    assertUnauthorized(await agent.post('', { path: '/_files/raw?path=data.csv', method: 'GET' }), '/_files/raw');
    const list = await agent.get('/_files/list', { headers: auth });
    assert.equal(list.status, 200, list.text);
    assert.ok(JSON.parse(list.text).files.some((f) => f.path === 'data.csv' || f.name === 'data.csv'), list.text);
    const raw = await agent.get('/_files/raw?path=data.csv', { headers: auth });
    assert.equal(raw.status, 200);
    assert.equal(raw.text, 'a,b\n1,2\n');
    // Files by descriptor are the unix socket's: on TCP, fd=1 gets the
    // bytes (what the supervisor relays for a Pod), and no /_files/receive.
    const rawFd = await agent.get('/_files/raw?path=data.csv&fd=1', { headers: auth });
    assert.equal(rawFd.status, 200);
    assert.equal(rawFd.text, 'a,b\n1,2\n');
    const rcv = await agent.fetch(`${agent.baseUrl}/_files/receive?name=r.txt`, {
      method: 'POST', headers: auth, body: '3', duplex: 'half',
    });
    assert.equal(rcv.status, 404, await rcv.text());

    // An upload without the secret leaves nothing; with it, the file lands.
    const up = async (headers) => {
      const res = await agent.fetch(`${agent.baseUrl}/_files/upload?name=up.txt`, {
        method: 'POST', headers, body: 'uploaded bytes', duplex: 'half',
      });
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    assertUnauthorized(await up({}), 'upload without the secret');
    assert.ok(!existsSync(join(agent.workspace, 'up.txt')));
    const ok = await up(auth);
    assert.equal(ok.status, 201, ok.text);
    assert.equal(readFileSync(join(agent.workspace, 'up.txt'), 'utf8'), 'uploaded bytes');
  });

  test('no link pages of its own: the supervisor serves those', async () => {
    const r = await agent.get('/f/anything', { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(r.status, 404);
    const client = await sdkClient(agent, { Authorization: `Bearer ${secret}` });
    try {
      const s = await client.callTool({ name: 'share_file', arguments: { path: 'data.csv' } });
      assert.match(textOf(s), /not set up/i, textOf(s));
    } finally {
      await client.close();
    }
  });

  test('the secret is never logged', () => {
    assert.ok(!agent.stderr().includes(secret), agent.stderr());
    assert.ok(!agent.stderr().includes(secret.slice(0, 16)), 'not even a piece of it');
    assert.match(agent.stderr(), /refused a request for \/mcp on TCP: no Authorization header/);
    assert.match(agent.stderr(), /refused a request for \/mcp on TCP: not the agent secret/);
  });
});

describe('VIVARIUM_AGENT_SECRET_FILE', () => {
  let agent;
  let dir;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'vivarium-secret-'));
    writeFileSync(join(dir, 'secret'), `${secret}\n`, { mode: 0o600 });
    agent = await startAgent({ env: { VIVARIUM_AGENT_SECRET_FILE: join(dir, 'secret') } });
  });
  after(async () => {
    await agent.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('read from the file (its newline dropped); runs do not see the variable', async () => {
    assertUnauthorized(await agent.post(ping), 'no header');
    const client = await sdkClient(agent, { Authorization: `Bearer ${secret}` });
    try {
      const r = await client.callTool({ name: 'run_python', arguments: { code: 'import os\nprint(sorted(k for k in os.environ if "SECRET" in k))' } });
      assert.match(textOf(r), /^\[\]$/m, textOf(r));
    } finally {
      await client.close();
    }
  });
});

describe('a secret on TCP and the unix socket beside it', () => {
  let agent;
  before(async () => {
    agent = await startAgent({ transport: 'unix', env: { VIVARIUM_AGENT_SECRET: secret, VIVARIUM_PORT: '0' } });
  });
  after(async () => { await agent.stop(); });

  test('the socket needs no secret (its file mode guards it)', async () => {
    const r = await agent.post(ping);
    assert.equal(r.status, 200, r.text);
    // The agent says it listens on TCP after the socket it was waited
    // for: that line may not have come yet.
    let m;
    for (let i = 0; !(m = /listening on (http:\/\/[^/\s]+)\//.exec(agent.stderr())) && i < 200; i++) await sleep(50);
    assert.ok(m, `no TCP listening line:\n${agent.stderr()}`);
    const tcp = m[1];
    const f = makeFetch(null);
    try {
      const res = await f(`${tcp}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ping });
      assert.equal(res.status, 401);
      await res.text();
    } finally {
      await f.close();
    }
  });
});

describe('without a secret TCP is as before', () => {
  let agent;
  before(async () => { agent = await startAgent(); });
  after(async () => { await agent.stop(); });

  test('/mcp open, /_files/ not served on TCP', async () => {
    const r = await agent.post(ping);
    assert.equal(r.status, 200, r.text);
    assert.equal((await agent.get('/_files/list')).status, 404);
  });
});

describe('bad values stop the start', () => {
  const ws = mkdtempSync(join(tmpdir(), 'vivarium-secret-bad-'));
  after(() => rmSync(ws, { recursive: true, force: true }));

  function start(env) {
    const r = spawnSync(agentBin, [], {
      env: { ...process.env, VIVARIUM_WORKDIR: ws, VIVARIUM_HOST: '127.0.0.1', VIVARIUM_PORT: '0', ...env },
      encoding: 'utf8', timeout: 10000,
    });
    return { status: r.status, stderr: r.stderr };
  }

  const short = 'abcdefghij'.repeat(3); // 30
  const cases = [
    ['too short', { VIVARIUM_AGENT_SECRET: short }, /VIVARIUM_AGENT_SECRET: 30 characters; expected 32 to 128/, short],
    ['too long', { VIVARIUM_AGENT_SECRET: 'k'.repeat(129) }, /VIVARIUM_AGENT_SECRET: 129 characters/, 'kkkkkkkk'],
    ['a space', { VIVARIUM_AGENT_SECRET: `${secret.slice(0, 20)} ${secret.slice(20)}` }, /character 21 is a space/, secret.slice(0, 20)],
    ['not ASCII', { VIVARIUM_AGENT_SECRET: `${secret}é` }, /not ASCII/, secret.slice(0, 20)],
    ['both set', { VIVARIUM_AGENT_SECRET: secret, VIVARIUM_AGENT_SECRET_FILE: '/etc/hostname' }, /both set; set one/, secret],
    ['a missing file', { VIVARIUM_AGENT_SECRET_FILE: join(ws, 'nope') }, /VIVARIUM_AGENT_SECRET_FILE=".*nope": No such file/, null],
    ['a directory', { VIVARIUM_AGENT_SECRET_FILE: ws }, /not a regular file/, null],
    ['no TCP listener', { VIVARIUM_AGENT_SECRET: secret, VIVARIUM_PORT: 'off', VIVARIUM_SOCKET: join(ws, 's.sock') }, /VIVARIUM_PORT=off/, secret],
  ];
  for (const [what, env, want, hidden] of cases) {
    test(what, () => {
      const r = start(env);
      assert.equal(r.status, 1, `${what}: exit ${r.status}\n${r.stderr}`);
      assert.match(r.stderr, /configuration problem/, r.stderr);
      assert.match(r.stderr, want, r.stderr);
      if (hidden) assert.ok(!r.stderr.includes(hidden), `${what}: the value is not printed`);
    });
  }

  test('a file of the wrong length, named without its content', () => {
    writeFileSync(join(ws, 'short'), `${short}\n`);
    const r = start({ VIVARIUM_AGENT_SECRET_FILE: join(ws, 'short') });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /VIVARIUM_AGENT_SECRET_FILE: 30 characters/, r.stderr);
    assert.ok(!r.stderr.includes(short));
  });
});
