// faults.test.mjs: the API server refusing (RBAC 403), failing (500),
// gone, cutting watches, answering 410 for a stale resourceVersion, a Pod
// that never gets Ready, a wrong token and a wrong CA.  The client gets a
// clear error, nothing half-made is left behind, and once the fault is
// gone the next call works.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './stack.mjs';
import { freePort } from '../e2e/harness.mjs';
import { runPython, assertClean, withReport } from './lib.mjs';
import { makeCerts } from './fakeapi.mjs';

let s;
before(async () => { s = await startStack({ readyTimeout: '4s' }); });
after(async () => { await s?.stop(); });
afterEach(() => { s.api.clearFaults(); s.api.kubelet.neverReady = false; s.api.afterCreate = null; assertClean(s.api); });

const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'k8s-faults', version: '0' } } });
const first = (u) => s.sv.post(init, { userId: u });
const works = (u) => withReport(s.api, u, async () => {
  const c = await s.sv.client(u);
  const r = await runPython(c, 'print(6*7)');
  await c.close();
  assert.match(r.text, /42/);
});
const errorOf = (r) => r.json?.error?.message ?? r.text;

test('RBAC 403 on creating Pods: a clear error naming the permission; no Pod; works once allowed', async () => {
  const rule = s.api.inject({ verb: 'create', resource: 'pods', status: 403 });
  const r = await first('rbac');
  assert.ok(r.status >= 400, `status ${r.status}`);
  assert.ok(rule.hits >= 1);
  assert.match(errorOf(r), /forbidden|cannot create|403/i, errorOf(r));
  assert.match(errorOf(r), /pods/, 'says what it could not do');
  assert.equal(s.api.pod('vivarium-rbac'), null);
  s.api.clearFaults();
  await works('rbac');
  assert.equal(s.api.objects('pods').filter((p) => p.metadata.name === 'vivarium-rbac').length, 1);
});

test('500 on creating the claim: an error, no Pod made; then it works', async () => {
  s.api.inject({ verb: 'create', resource: 'persistentvolumeclaims', status: 500, times: 1 });
  const r = await first('five');
  assert.ok(r.status >= 500, `status ${r.status}: ${r.text}`);
  assert.match(errorOf(r), /500|internal|error/i);
  assert.equal(s.api.calls('create', 'pods').filter((q) => q.body?.metadata?.name === 'vivarium-five').length, 0, 'no Pod without its claim');
  await works('five');
});

test('the API server down: 503 with a clear message; running sandboxes keep answering; back up, it recovers', async () => {
  await works('up');
  await s.api.down();
  const r = await first('down');
  assert.equal(r.status, 503, r.text);
  assert.match(errorOf(r), /reach|unreachable|connect|refused/i, errorOf(r));
  // A sandbox already running does not need the API server.
  await works('up');
  await s.api.up();
  await works('down');
});

// A watch cut after its head but before any event (the usual case while a
// Pod is still starting), or closed with no reply at all, is read again
// rather than failing the call: both failed it with a 503 before 52c64be.

test('a watch cut mid-stream while waiting for Ready: the supervisor watches again and the call succeeds', async () => {
  s.api.kubelet.readyDelayMs = 800;
  const rule = s.api.inject({ verb: 'watch', resource: 'pods', status: 'cut', times: 1 });
  try {
    await works('cut');
  } finally { s.api.kubelet.readyDelayMs = 0; }
  assert.equal(rule.hits, 1, 'the watch was cut once');
  assert.ok(s.api.calls('watch', 'pods').length >= 2, 'watched again');
});

test('410 Gone for a stale resourceVersion: the supervisor reads the Pod again and the call succeeds', async () => {
  s.api.kubelet.readyDelayMs = 500;
  const rule = s.api.inject({ verb: 'watch', resource: 'pods', status: 410, times: 1 });
  try {
    await works('gone');
  } finally { s.api.kubelet.readyDelayMs = 0; }
  assert.equal(rule.hits, 1);
  const watches = s.api.calls('watch', 'pods').filter((w) => w.query.fieldSelector === 'metadata.name=vivarium-gone');
  assert.ok(watches.some((w) => (w.events || []).includes('ERROR')), 'a watch got the 410 ERROR event');
  assert.ok(watches.length >= 2, 'and it watched again');
});

test('a connection dropped without a reply on a watch: the supervisor tries again rather than failing the call', async () => {
  s.api.kubelet.readyDelayMs = 500;
  s.api.inject({ verb: 'watch', resource: 'pods', status: 'drop', times: 1 });
  try {
    await works('dropped');
  } finally { s.api.kubelet.readyDelayMs = 0; }
});

test('a Pod that never gets Ready: a clear error after ready_timeout; once it can get Ready, the next call works with one Pod', async () => {
  s.api.kubelet.neverReady = true;
  const r = await first('stuck');
  assert.ok(r.status >= 500, `status ${r.status}`);
  assert.match(errorOf(r), /ready|timed? ?out|did not answer/i, errorOf(r));
  assert.match(errorOf(r), /vivarium-stuck|stuck/, 'names the sandbox');
  s.api.kubelet.neverReady = false;
  await works('stuck');
  assert.equal(s.api.objects('pods').filter((p) => p.metadata.name === 'vivarium-stuck').length, 1);
});

test('ready_timeout is waited in full, not cut to whole seconds of watch', async () => {
  s.api.kubelet.neverReady = true;
  const t0 = Date.now();
  const r = await first('slowpoke');
  const took = Date.now() - t0;
  s.api.kubelet.neverReady = false;
  assert.ok(r.status >= 500, `status ${r.status}`);
  assert.ok(took >= 3900 && took < 15000, `took ${took} ms with ready_timeout 4s`);
});

test('started while the API server is down: the supervisor runs, answers 503, and adopts and serves once it is back', async () => {
  await works('early');
  const pod = s.api.pod('vivarium-early');
  await s.api.down();
  await s.restart();
  const r = await first('late-comer');
  assert.equal(r.status, 503, r.text);
  const n = s.api.requests.length;
  await s.api.up();
  await works('late-comer');
  await works('early');
  assert.equal(s.api.pod('vivarium-early').metadata.uid, pod.metadata.uid, 'the Pod from before adopted, not remade');
  assert.ok(!s.api.requests.slice(n).some((q) => q.verb === 'create' && q.resource === 'pods' && q.body?.metadata?.name === 'vivarium-early'), 'no Pod made for it');
});

test('export and import on the kubernetes backend: a clear refusal, nothing made', async () => {
  let r = await s.ctl('export', 'early');
  assert.notEqual(r.code, 0);
  assert.match(r.err, /not supported on the kubernetes backend/);
  assert.equal(r.out, '', 'no tar on stdout');
  const n = s.api.calls('create').length;
  r = await s.ctl('import', 'newbie');
  assert.notEqual(r.code, 0);
  assert.match(r.err, /not supported on the kubernetes backend/);
  assert.equal(s.api.calls('create').length, n, 'nothing made for the refused import');
});

test('the token and the agent secrets are never logged', () => {
  const log = s.sv.stderr();
  assert.ok(!log.includes(s.api.token), 'the API token is in the log');
  const secrets = s.secrets();
  assert.ok(secrets.length > 0);
  for (const x of secrets) assert.ok(!log.includes(x), 'a Pod\'s agent secret is in the log');
});

test('a wrong token: the API server answers 401 and the client gets a clear error', async () => {
  const kc = s.api.writeKubeconfig(join(s.dir, 'bad-token.kubeconfig'), { tokenValue: 'not-the-token' });
  const n = s.api.requests.length;
  await s.restart({ kubeconfig: kc });
  const r = await first('tok');
  assert.ok(r.status >= 500, `status ${r.status}`);
  assert.match(errorOf(r) + s.sv.stderr(), /401|unauthori[sz]ed|token/i);
  assert.ok(s.api.requests.slice(n).every((q) => q.status === 401), 'nothing done without the token');
  assert.ok(!s.sv.stderr().includes('not-the-token'), 'the token is never logged');
});

test('a CA that is not the server\'s: TLS refused, no request reaches the API', async () => {
  const other = mkdtempSync(join(s.dir, 'other-ca-'));
  const certs = makeCerts(other, 'some-other-ca');
  const kc = s.api.writeKubeconfig(join(s.dir, 'bad-ca.kubeconfig'), { ca: readFileSync(certs.ca, 'utf8') });
  const n = s.api.requests.length;
  await s.restart({ kubeconfig: kc });
  const r = await first('tls');
  assert.ok(r.status >= 500, `status ${r.status}`);
  assert.equal(s.api.requests.length, n, 'no HTTP request got through');
  assert.match(errorOf(r) + s.sv.stderr(), /certificate|TLS|SSL|verify/i);
});

test('a server nobody listens on: 503, and the supervisor still serves once pointed right', async () => {
  const kc = s.api.writeKubeconfig(join(s.dir, 'dead.kubeconfig'), { server: `https://127.0.0.1:${await freePort()}` });
  await s.restart({ kubeconfig: kc });
  const r = await first('dead');
  assert.equal(r.status, 503, r.text);
  await s.restart();
  await works('dead');
});
