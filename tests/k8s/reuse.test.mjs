// reuse.test.mjs: a Pod's address outlives the Pod.  After an eviction the
// cluster may give it to another Pod: another user's sandbox, or whatever
// code listens there.  The supervisor's cached address must then get
// nothing of the first user's (not a request, not the agent secret), and
// the call must go to a new Pod of the right user (docs/kubernetes.md,
// "Reaching the agent").  Also: a 401 from what holds the address asks the
// API server again instead of answering 502; every Pod its own secret.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { startStack, podSecret } from './stack.mjs';
import { runPython, assertClean, withReport } from './lib.mjs';

let s;
before(async () => { s = await startStack(); });
after(async () => { await s?.stop(); });
afterEach(() => assertClean(s.api));

const podOf = (u) => s.api.pod(`vivarium-${u}`);
const podCreates = (u) => s.api.calls('create', 'pods').filter((r) => r.status === 201 && r.body?.metadata?.name === `vivarium-${u}`).length;
const podGets = (u) => s.api.requests.filter((r) => r.verb === 'get' && r.resource === 'pods' && r.name === `vivarium-${u}`).length;

// Something at host:port that is not the user's agent: it records every
// request whole and answers anything as an agent would, /mcp with a result
// of its own.  With secret, it also answers the challenge as the agent
// holding that secret would (common/proof.h), and then refuses /mcp (401).
async function impostor(host, port, { secret } = {}) {
  const seen = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/health') {
        const nonce = req.headers['x-vivarium-challenge'];
        if (secret && nonce) {
          const proof = createHmac('sha256', secret).update(Buffer.concat([Buffer.from('vivarium-agent-proof\0'),
            Buffer.from(nonce), Buffer.from('\0'), Buffer.from(host), Buffer.from('\0'), Buffer.from(String(port))])).digest('hex');
          res.setHeader('X-Vivarium-Proof', proof);
        }
        return res.end('ok\n');
      }
      if (secret) {
        res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
        return res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Unauthorized"}}');
      }
      let id = null;
      try { id = JSON.parse(body).id ?? null; } catch { /* not JSON */ }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'answered by the impostor' }], isError: false } }));
    });
  });
  await new Promise((res, rej) => { srv.once('error', rej); srv.listen(port, host, res); });
  return { seen, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); }) };
}

// The user's sandbox at work, with a file and a variable to tell it by.
async function warm(u) {
  const c = await s.sv.client(u);
  const r = await runPython(c, `mark = 'namespace of ${u}'\nopen('whose.txt', 'w').write('${u}')\nprint('ready')`);
  assert.match(r.text, /ready/);
  return c;
}

test('an evicted Pod\'s address taken by an impostor: it gets no request and no secret; a new Pod of the user answers', async () => {
  const u = 'alice';
  const c = await warm(u);
  const old = podOf(u);
  const ip = old.status.podIP;
  const oldSecret = podSecret(old);
  const made = podCreates(u);
  await s.api.kubelet.evict(old.metadata.name);
  const imp = await impostor(ip, s.agentPort);
  try {
    const r = await withReport(s.api, u, () => runPython(c, "print('file of', open('whose.txt').read())"));
    assert.doesNotMatch(r.text, /impostor/, 'the impostor answered for alice');
    assert.match(r.text, /file of alice/, 'her workspace, on a new Pod');
    // What the impostor saw: a challenge, and nothing of alice's.
    for (const q of imp.seen) {
      assert.equal(q.url, '/health', `the impostor got ${q.method} ${q.url}`);
      assert.equal(q.headers.authorization, undefined, 'the impostor got an Authorization header');
      assert.ok(!JSON.stringify(q).includes(oldSecret), 'the impostor got alice\'s secret');
    }
    assert.ok(imp.seen.length >= 1, 'the cached address was challenged');
  } finally {
    await imp.close();
  }
  assert.equal(podCreates(u), made + 1, 'a new Pod for alice');
  const now = podOf(u);
  assert.notEqual(now.metadata.uid, old.metadata.uid);
  assert.notEqual(now.status.podIP, ip);
  assert.notEqual(podSecret(now), oldSecret, 'a new Pod, a new secret');
  await c.close();
});

test('an evicted Pod\'s address given to another user\'s Pod: that agent never sees the first user\'s request or secret', async () => {
  const c = await warm('bob');
  const old = podOf('bob');
  const ip = old.status.podIP;
  await s.api.kubelet.evict(old.metadata.name);
  // Carol's new Pod gets bob's old address.
  s.api.kubelet.nextIps.push(ip);
  const cc = await warm('carol');
  assert.equal(podOf('carol').status.podIP, ip, 'carol\'s Pod has bob\'s old address');
  const carolLog = () => s.api.kubelet.logs.get('vivarium-carol') || '';
  const before = carolLog().length;
  const r = await withReport(s.api, 'bob', () => runPython(c, "print('file of', open('whose.txt').read(), 'and', mark)"));
  assert.match(r.text, /file of bob/, 'bob\'s own workspace');
  assert.doesNotMatch(r.text, /namespace of carol|file of carol/, 'bob\'s call ran in carol\'s sandbox');
  // Carol's agent refused nothing: no request with a secret reached it.
  assert.doesNotMatch(carolLog().slice(before), /refused a request/, carolLog().slice(before));
  assert.notEqual(podOf('bob').status.podIP, ip);
  // And carol's own sandbox is hers still.
  assert.match((await runPython(cc, 'print(mark)')).text, /namespace of carol/);
  await c.close();
  await cc.close();
});

test('a 401 from whatever holds the address asks the API server again, once, instead of a 502', async () => {
  const u = 'dave';
  const c = await warm(u);
  const old = podOf(u);
  const ip = old.status.podIP;
  // One that holds dave's secret (so it passes the challenge) but refuses
  // it, where dave's Pod was: the supervisor must look again.
  await s.api.kubelet.evict(old.metadata.name);
  const imp = await impostor(ip, s.agentPort, { secret: podSecret(old) });
  const gets = podGets(u);
  try {
    const r = await withReport(s.api, u, () => runPython(c, "print('file of', open('whose.txt').read())"));
    assert.match(r.text, /file of dave/);
    assert.ok(imp.seen.some((q) => q.url === '/mcp'), 'the request went to it after its proof');
  } finally {
    await imp.close();
  }
  assert.ok(podGets(u) > gets, 'the Pod was looked up again');
  assert.notEqual(podOf(u).metadata.uid, old.metadata.uid, 'and made again');
  await c.close();
});

test('the same 401 from a Pod that is still there: one more look, then the error (not LibreChat\'s "sign in")', async () => {
  const u = 'erin';
  const c = await warm(u);
  const pod = podOf(u);
  // The agent replaced, in the same Pod, by one that proves the secret
  // and refuses it: the API server still says the Pod is fine.
  const r0 = s.api.kubelet.running(pod.metadata.name);
  r0.stopping = true;
  r0.proc.kill('SIGKILL');
  await r0.exited;
  const imp = await impostor(pod.status.podIP, s.agentPort, { secret: podSecret(pod) });
  const gets = podGets(u);
  try {
    const res = await s.sv.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { userId: u });
    assert.equal(res.status, 502, res.text);
    assert.match(res.text, /refused the supervisor's secret/);
    assert.equal(imp.seen.filter((q) => q.url === '/mcp').length, 2, 'tried twice: before and after looking again');
  } finally {
    await imp.close();
  }
  assert.ok(podGets(u) > gets, 'the Pod was looked up again');
  await c.close().catch(() => {});
});
