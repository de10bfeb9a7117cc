// Streaming through the supervisor, end to end, without Podman: a stand-in
// Podman (recorded 4.3.1 replies from tests/data/podman) says the user's
// container is running, and a stand-in agent on the user's socket answers
// with an SSE stream whose events are spaced out in time.  The client must
// see the first event before the agent has even written the second, and
// the MCP headers must pass both ways.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startServer, repoRoot, supervisorBin, freePort } from '../e2e/harness.mjs';
import { TOKEN } from './lib.mjs';

const tag = randomBytes(3).toString('hex');
const state = `/tmp/vss-${tag}`;
const user = 'streamer';
let podman, agent, bad, sv, lastAgentReq;

// The body of a recorded reply.
const recorded = (name) => readFileSync(join(repoRoot, 'tests/data/podman', name), 'latin1').split('\r\n\r\n').slice(1).join('\r\n\r\n');

function listen(server, path) {
  rmSync(path, { force: true });
  return new Promise((res) => server.listen(path, res));
}

before(async () => {
  mkdirSync(join(state, 'users', user), { recursive: true });
  podman = createServer((req, res) => {
    const u = req.url;
    let body = null;
    if (u.startsWith('/v4.0.0/libpod/version')) body = recorded('version.http');
    // Rootful, as /info says it (only the field the supervisor reads).
    else if (u.startsWith('/v4.0.0/libpod/info')) body = '{"host":{"security":{"rootless":false}}}';
    else if (u.startsWith(`/v4.0.0/libpod/containers/vivarium-${user}/json`)) body = recorded('container-inspect-running.http');
    else if (u.startsWith('/v4.0.0/libpod/containers/json')) body = '[]';
    if (body === null) { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{"cause":"no such object","message":"not here","response":404}'); return; }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await listen(podman, join(state, 'podman.sock'));
  agent = createServer((req, res) => {
    if (req.url === '/health') { res.writeHead(200); res.end('{"status":"ok"}'); return; }
    let data = '';
    req.on('data', (d) => { data += d; });
    req.on('end', () => {
      lastAgentReq = { headers: req.headers, body: data, method: req.method };
      if (req.method === 'DELETE') { res.writeHead(404, { 'content-type': 'application/json' }); res.end('{"error":"unknown session"}'); return; }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': 'sess-1' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n');
      agent.secondAt = Date.now() + 700;
      setTimeout(() => {
        res.end('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
      }, 700);
    });
  });
  agent.connections = 0;
  agent.on('connection', () => { agent.connections++; });
  await listen(agent, join(state, 'users', user, 'agent.sock'));
  sv = await startServer(supervisorBin, {
    env: {
      VIVARIUM_SUPERVISOR_TOKEN: TOKEN, VIVARIUM_PODMAN_SOCKET: join(state, 'podman.sock'),
      VIVARIUM_STATE_DIR: state, VIVARIUM_SUPERVISOR_LISTEN: `127.0.0.1:${await freePort()}`,
    },
  });
});

after(async () => {
  if (sv) { sv.proc.kill('SIGTERM'); await sv.exited; }
  podman?.close(); agent?.close(); bad?.close();
  rmSync(state, { recursive: true, force: true });
});

test('an SSE reply reaches the client event by event, with the MCP headers both ways', async () => {
  const t0 = Date.now();
  const res = await fetch(`${sv.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`, 'x-user-id': user, 'content-type': 'application/json',
      accept: 'application/json, text/event-stream', 'mcp-session-id': 'sess-1', 'mcp-protocol-version': '2025-06-18',
      'last-event-id': '7',
    },
    body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1"},"_meta":{"progressToken":1}}}',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  assert.equal(res.headers.get('mcp-session-id'), 'sess-1');
  assert.equal(res.headers.get('cache-control'), 'no-cache');
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  while (!text.includes('\n\n')) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'stream ended before the first event');
    text += dec.decode(value, { stream: true });
  }
  const firstAt = Date.now();
  assert.match(text, /notifications\/progress/);
  assert.ok(firstAt < agent.secondAt, `first event came ${firstAt - t0} ms in, after the second was sent`);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
  }
  assert.match(text, /"result":\{\}/);
  assert.ok(Date.now() - t0 >= 650, 'the second event waited for the agent');
  // What the agent got.
  assert.equal(lastAgentReq.headers['mcp-session-id'], 'sess-1');
  assert.equal(lastAgentReq.headers['mcp-protocol-version'], '2025-06-18');
  assert.equal(lastAgentReq.headers['last-event-id'], '7');
  assert.equal(lastAgentReq.headers.authorization, undefined, 'the token stays with the supervisor');
  assert.match(lastAgentReq.body, /progressToken/);
});

test('DELETE and the agent\'s own status codes pass through; the kept connection is reused', async () => {
  const res = await fetch(`${sv.baseUrl}/u/${user}/mcp`, {
    method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}`, 'mcp-session-id': 'gone' },
  });
  assert.equal(res.status, 404);
  assert.match(await res.text(), /unknown session/);
  assert.equal(lastAgentReq.method, 'DELETE');
  assert.equal(lastAgentReq.headers['mcp-session-id'], 'gone');
  // The readiness probe, then one connection for both relayed requests.
  assert.equal(agent.connections, 2);
});

// Code in the sandbox can put its own server on the agent's socket, so the
// supervisor reads the reply with the egress proxy's strict parser
// (common/http1.c): a head it could read two ways never reaches the client.
test('a reply head the strict parser refuses reaches the client as a 502 that says why', async () => {
  const replies = [
    ['HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\nhello world!', /malformed Content-Length/],
    ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      /both Content-Length and Transfer-Encoding/],
    ['HTTP/1.1 200garbage\r\nContent-Length: 2\r\n\r\nok', /malformed status line/],
  ];
  agent.closeAllConnections();
  await new Promise((res) => agent.close(res));
  agent = null;
  let next = 0;
  bad = createNetServer((sock) => {
    let got = '';
    sock.on('data', (d) => {
      got += d;
      if (!got.includes('\r\n\r\n')) return;
      sock.end(got.startsWith('GET /health') ? 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok' : replies[next][0]);
      got = '';
    });
  });
  await listen(bad, join(state, 'users', user, 'agent.sock'));
  for (next = 0; next < replies.length; next++) {
    const res = await fetch(`${sv.baseUrl}/u/${user}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    const body = await res.text();
    assert.equal(res.status, 502, body);
    assert.match(JSON.parse(body).error.message, replies[next][1]);
    assert.match(body, /malformed reply/);
  }
});

test('a refusal quoting bytes that are not UTF-8 still gets its JSON-RPC answer', async () => {
  // The 404 quotes the (unescaped) path; json_pack refused it, and the
  // connection closed without an answer.
  const res = await fetch(`${sv.baseUrl}/nope-%ff%fe`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 404);
  const body = await res.json();
  assert.equal(body.error.code, -32000);
  assert.match(body.error.message, /nope-\\xff\\xfe/);
});
