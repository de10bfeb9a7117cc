// supervisor.test.mjs: the real supervisor with `backend: kubernetes`
// against the fake API server and kubelet, driven by the MCP SDK client as
// LibreChat drives it.  Every object the supervisor POSTs is checked by
// validate.mjs (the fake answers 422 and the test fails), and it may use
// only the contract's REST paths.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startStack, NS } from './stack.mjs';
import { until } from '../e2e/harness.mjs';
import { runPython, assertClean } from './lib.mjs';
import { LABEL_SELECTOR } from './fixtures/objects.mjs';
import { parseDocuments } from './validate.mjs';
import { TOKEN } from '../supervisor/lib.mjs';

let s;
before(async () => { s = await startStack(); });
after(async () => { await s?.stop(); });
afterEach(() => assertClean(s.api));

const creates = (user) => s.api.calls('create').filter((r) => r.status === 201 && JSON.stringify(r.body?.metadata?.labels || {}).includes(`"vivarium.io/user":"${user}"`));
const podOf = (u) => s.api.pod(`vivarium-${u}`);
const envOf = (pod) => Object.fromEntries(pod.spec.containers[0].env.map((e) => [e.name, e.value]));
const ready = (p) => p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

async function agentPost(ip, body, headers = {}) {
  const res = await fetch(`http://${ip}:${s.agentPort}/mcp`, {
    method: 'POST', body,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

test('at start the supervisor reaches the API server over its CA with the token (GET /version) and lists by label', async () => {
  assert.ok(s.api.calls('version').length >= 1, 'GET /version');
  assert.ok(s.api.requests.every((r) => r.status !== 401), 'no request without the token');
  assert.ok(s.api.requests.every((r) => r.authorization === `Bearer ${s.api.token}`));
  assert.deepEqual(s.api.tlsErrors, []);
  for (const r of s.api.calls('list')) assert.equal(r.query.labelSelector, LABEL_SELECTOR, `${r.path}: the contract's selector`);
});

test('a first call creates the PVC, the NetworkPolicy and the Pod; run_python works and the namespace carries over', async () => {
  const c = await s.sv.client('alice');
  let r = await runPython(c, 'x = 41\nprint("hello from the pod")');
  assert.match(r.text, /hello from the pod/);
  const made = creates('alice');
  assert.deepEqual(made.map((q) => q.resource).sort(), ['networkpolicies', 'persistentvolumeclaims', 'pods'], 'each made once');
  const order = made.map((q) => q.resource);
  assert.ok(order.indexOf('persistentvolumeclaims') < order.indexOf('pods'), 'the claim (which holds the uid slot) before the Pod');
  assert.ok(order.indexOf('networkpolicies') < order.indexOf('pods'), 'the NetworkPolicy before the Pod: never a Pod without its walls');
  for (const q of made) assert.equal(q.namespace, NS);
  const pvc = s.api.get('persistentvolumeclaims', 'vivarium-alice-workspace');
  const np = s.api.get('networkpolicies', 'vivarium-alice');
  const pod = podOf('alice');
  assert.ok(pvc && np && pod);
  assert.ok(ready(pod));
  assert.equal(Number(pvc.metadata.annotations['vivarium.io/uid']), pod.spec.securityContext.runAsUser, 'the uid kept on the claim is the Pod\'s');
  assert.ok(pod.spec.securityContext.runAsUser > 0x78000000, 'uid_base 0x78000000, above the usual subordinate ranges');
  const env = envOf(pod);
  assert.match(env.VIVARIUM_AGENT_SECRET, /^[0-9a-f]{64}$/, 'a random secret');
  assert.equal(env.HTTPS_PROXY, `http://127.0.0.1:${s.egress.port}`, 'the proxy by address');
  // The agent took its secret out of the environment: user code cannot see it.
  r = await runPython(c, `import os
print('secret:', os.environ.get('VIVARIUM_AGENT_SECRET'), os.environ.get('VIVARIUM_AGENT_SECRET_FILE'))
print('uid:', os.getuid())
print(x + 1)`);
  assert.match(r.text, /secret: None None/);
  assert.match(r.text, /^42$/m, 'the namespace carried over');
  if (process.getuid() === 0) assert.match(r.text, new RegExp(`uid: ${pod.spec.securityContext.runAsUser}`));
  // Egress: through the real proxy, to the one origin it allows.
  r = await runPython(c, `import urllib.request
print(urllib.request.urlopen(${JSON.stringify(s.egress.origin + '/from-alice')}, timeout=10).read().decode())`);
  assert.match(r.text, /origin says hello to \/from-alice/);
  assert.match(s.egress.log(), /127\.0\.0\.2/, 'the request went through the egress proxy');
  await c.close();
});

test('vivariumctl render --kubernetes prints exactly what the backend POSTed (but the uid slot)', async () => {
  const r = await s.ctl('render', '--kubernetes', 'alice');
  assert.equal(r.code, 0, r.err);
  const rendered = parseDocuments(r.out);
  const posted = creates('alice').map((q) => q.body);
  assert.deepEqual(rendered.map((d) => d.kind), ['PersistentVolumeClaim', 'NetworkPolicy', 'Pod']);
  // The slot and what follows from it may differ when render does not
  // know the claim (the contract: slot 0 then).
  const norm = (o) => {
    const c = structuredClone(o);
    if (c.metadata.annotations) { delete c.metadata.annotations['vivarium.io/uid']; delete c.metadata.annotations['vivarium.io/spec-hash']; }
    // Random per Pod: render makes a new one each time.
    for (const e of c.spec?.containers?.[0]?.env || []) if (e.name === 'VIVARIUM_AGENT_SECRET') e.value = 'SECRET';
    const sc = c.spec?.securityContext;
    if (sc) for (const k of ['runAsUser', 'runAsGroup', 'fsGroup']) if (k in sc) sc[k] = 'UID';
    return c;
  };
  for (const d of rendered) {
    const p = posted.find((x) => x.kind === d.kind);
    assert.ok(p, `${d.kind} was POSTed`);
    assert.deepEqual(norm(d), norm(p), `${d.kind}: render and the backend agree`);
  }
});

test('two users get two Pods with different uids, addresses and secrets; a wrong secret is refused at the agent', async () => {
  const c = await s.sv.client('bob');
  assert.match((await runPython(c, 'print(6*7)')).text, /42/);
  await c.close();
  const a = podOf('alice'), b = podOf('bob');
  assert.notEqual(a.spec.securityContext.runAsUser, b.spec.securityContext.runAsUser);
  assert.notEqual(a.status.podIP, b.status.podIP);
  assert.notEqual(envOf(a).VIVARIUM_AGENT_SECRET, envOf(b).VIVARIUM_AGENT_SECRET);
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  // Alice's secret, no secret, a Bearer of nothing: 401 at Bob's agent.
  for (const h of [{ authorization: `Bearer ${s.secretOf('alice')}` }, {}, { authorization: 'Bearer ' }]) {
    const r = await agentPost(b.status.podIP, ping, h);
    assert.equal(r.status, 401, `${JSON.stringify(h)}: ${r.text}`);
    assert.match(r.headers.get('www-authenticate') || '', /^Bearer/);
  }
  // The client's own token is not the agent's secret either.
  assert.equal((await agentPost(b.status.podIP, ping, { authorization: `Bearer ${TOKEN}` })).status, 401);
  // Bob's own secret passes; /health needs none (the readiness probe).
  assert.notEqual((await agentPost(b.status.podIP, ping, { authorization: `Bearer ${s.secretOf('bob')}` })).status, 401);
  assert.equal((await fetch(`http://${b.status.podIP}:${s.agentPort}/health`)).status, 200);
});

test('eight concurrent first requests for one user create one Pod', async () => {
  const u = 'carl';
  const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
    const c = await s.sv.client(u);
    const r = await runPython(c, `print('n', ${i})`);
    await c.close();
    return r.text;
  }));
  results.forEach((t, i) => assert.match(t, new RegExp(`n ${i}`)));
  const pods = s.api.calls('create', 'pods').filter((r) => r.body?.metadata?.name === `vivarium-${u}`);
  assert.equal(pods.length, 1, `POSTs of the Pod: ${pods.map((p) => p.status).join(',')}`);
  assert.equal(s.api.calls('create', 'persistentvolumeclaims').filter((r) => r.body?.metadata?.name === `vivarium-${u}-workspace`).length, 1);
  assert.equal(s.api.kubelet.started, s.api.calls('create', 'pods').filter((r) => r.status === 201).length, 'one agent per Pod made');
});

test('vivariumctl list and status go through the backend to the API server', async () => {
  const n = s.api.requests.length;
  let r = await s.ctl('list');
  assert.equal(r.code, 0, r.err);
  for (const u of ['alice', 'bob', 'carl']) assert.match(r.out, new RegExp(`^${u}\\s+-\\s+running`, 'm'), r.out);
  assert.ok(s.api.requests.length > n, 'vivariumctl asked the API server');
  r = await s.ctl('--json', 'list');
  assert.equal(r.code, 0, r.err);
  r = await s.ctl('status', 'alice');
  assert.equal(r.code, 0, `${r.out}${r.err}`);
  r = await s.ctl('status', 'nobody');
  assert.equal(r.code, 3, `no such user: ${r.out}${r.err}`);
  // stop deletes the Pod and keeps the claim: "not running" (5), then start.
  r = await s.ctl('stop', 'bob');
  assert.equal(r.code, 0, r.err);
  await until(() => !podOf('bob'), { what: 'bob\'s Pod gone' });
  assert.ok(s.api.get('persistentvolumeclaims', 'vivarium-bob-workspace'));
  r = await s.ctl('status', 'bob');
  assert.equal(r.code, 5, `stopped: ${r.out}${r.err}`);
  r = await s.ctl('start', 'bob');
  assert.equal(r.code, 0, r.err);
  assert.ok(ready(podOf('bob')));
});

test('a supervisor restart adopts the running Pods by label: no new Pod, the same agent, the namespace kept', async () => {
  const before = podOf('alice');
  const podCreates = s.api.calls('create', 'pods').length;
  const n = s.api.requests.length;
  await s.restart();
  const c = await s.sv.client('alice');
  const r = await runPython(c, 'print(x)');
  await c.close();
  assert.match(r.text, /^41$/m, 'the same agent process: its namespace is still there');
  assert.equal(s.api.calls('create', 'pods').length, podCreates, 'no Pod made');
  assert.equal(podOf('alice').metadata.uid, before.metadata.uid, 'the same Pod');
  const lists = s.api.requests.slice(n).filter((q) => q.verb === 'list' && q.resource === 'pods');
  assert.ok(lists.length >= 1, 'listed Pods on start');
  assert.equal(lists[0].query.labelSelector, LABEL_SELECTOR);
});

test('purge removes the Pod, the NetworkPolicy and the PVC, and the workspace with it', async () => {
  const ws = s.api.kubelet.volumeDir('vivarium-carl-workspace');
  const c0 = await s.sv.client('carl');
  await runPython(c0, "open('carl.txt', 'w').write('mine')");
  await c0.close();
  assert.ok(existsSync(join(ws, 'carl.txt')));
  const r = await s.ctl('remove-user', '--purge', 'carl');
  assert.equal(r.code, 0, `${r.out}${r.err}`);
  await until(() => !podOf('carl') && !s.api.get('persistentvolumeclaims', 'vivarium-carl-workspace') && !s.api.get('networkpolicies', 'vivarium-carl'),
    { what: 'all three gone' });
  const dels = s.api.calls('delete').filter((q) => q.name?.startsWith('vivarium-carl'));
  assert.deepEqual([...new Set(dels.map((q) => q.resource))].sort(), ['networkpolicies', 'persistentvolumeclaims', 'pods']);
  assert.ok(!existsSync(ws), 'the claim\'s volume is gone');
  // The others are untouched.
  assert.ok(podOf('alice') && podOf('bob'));
  // And carl can come back, with an empty workspace.
  const c = await s.sv.client('carl');
  const out = await runPython(c, "import os\nprint('carl.txt' in os.listdir('.'))");
  await c.close();
  assert.match(out.text, /^False$/m, 'an empty workspace');
});
