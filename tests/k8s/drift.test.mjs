// drift.test.mjs: a configuration changed under users who already have a
// sandbox.  Their NetworkPolicy follows it (replaced in place by PUT with
// the resourceVersion read, on the user's next call, never deleted and
// made again), an unchanged configuration leaves it alone, a 409 Conflict
// is read again once, a Role without update gives a clear error; a claim
// keeps its size and the log says so.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startStack, NS } from './stack.mjs';
import { until, freePort } from '../e2e/harness.mjs';
import { runPython, assertClean, withReport } from './lib.mjs';
import { kube } from './kclient.mjs';

const NPP = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`;
const SUP = 'app.kubernetes.io/name=vivarium-supervisor';
let s;
before(async () => { s = await startStack(); });
after(async () => { await s?.stop(); });
afterEach(() => { s.api.clearFaults(); assertClean(s.api); });

const call = (u) => withReport(s.api, u, async () => {
  const c = await s.sv.client(u);
  const r = await runPython(c, 'print(6*7)');
  await c.close();
  assert.match(r.text, /42/);
});
const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'k8s-drift', version: '0' } } });
// The requests from index n on that touch user u's policy.
const policyCalls = (n, u) => s.api.requests.slice(n).filter((r) => r.resource === 'networkpolicies' && r.name === `vivarium-${u}`
  || (r.resource === 'networkpolicies' && r.verb === 'create' && r.body?.metadata?.name === `vivarium-${u}`));
const ingressOf = (np) => np.spec.ingress;

test('an unchanged configuration: a restart sends no PUT, the policy stays as made', async () => {
  await call('ada');
  const made = s.api.get('networkpolicies', 'vivarium-ada');
  assert.match(made.metadata.annotations['vivarium.io/spec-hash'], /^[0-9a-f]{32}$/);
  await s.restart();
  const n = s.api.requests.length;
  await call('ada');
  assert.ok(policyCalls(n, 'ada').length >= 1, 'the policy was looked at');
  assert.deepEqual(policyCalls(n, 'ada').filter((r) => r.verb !== 'get'), [], 'only read');
  assert.equal(s.api.get('networkpolicies', 'vivarium-ada').metadata.resourceVersion, made.metadata.resourceVersion);
});

test('another supervisor_selector and agent_port: the next call replaces the policy by PUT, before the Pod, never deleting it', async () => {
  await call('bo');
  const old = s.api.get('networkpolicies', 'vivarium-bo');
  const port = await freePort();
  await s.restart({ kube: `supervisor_selector: ${SUP},tier=front\nagent_port: ${port}` });
  assert.deepEqual(ingressOf(s.api.get('networkpolicies', 'vivarium-bo')), ingressOf(old), 'nothing changes before the user comes');
  const n = s.api.requests.length;
  await call('bo');
  const pc = policyCalls(n, 'bo');
  assert.deepEqual(pc.map((r) => `${r.verb} ${r.status}`), ['get 200', 'update 200'], 'one GET, one PUT; no delete, no create');
  const put = pc[1];
  assert.equal(put.method, 'PUT');
  assert.equal(put.path, `${NPP}/vivarium-bo`);
  assert.equal(put.body.metadata.resourceVersion, old.metadata.resourceVersion, 'the resourceVersion read');
  assert.deepEqual(put.body.spec.ingress, [{
    from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'vivarium-supervisor', tier: 'front' } } }],
    ports: [{ protocol: 'TCP', port }],
  }]);
  assert.deepEqual(put.body.spec.egress, old.spec.egress, 'egress as it was');
  assert.notEqual(put.body.metadata.annotations['vivarium.io/spec-hash'], old.metadata.annotations['vivarium.io/spec-hash']);
  const now = s.api.get('networkpolicies', 'vivarium-bo');
  assert.equal(now.metadata.uid, old.metadata.uid, 'the same object, updated in place');
  assert.deepEqual(now.spec.ingress, put.body.spec.ingress);
  // The Pod (its agent_port changed) is made again only after the policy is.
  const podCreate = s.api.requests.slice(n).findIndex((r) => r.verb === 'create' && r.resource === 'pods');
  assert.ok(podCreate > s.api.requests.slice(n).indexOf(put), 'the policy before the new Pod');
  assert.equal(s.api.pod('vivarium-bo').spec.containers[0].ports[0].containerPort, port);
  assert.match(s.sv.stderr(), /bo: replaced NetworkPolicy vivarium-bo \(made from another configuration: ingress\)/);
  // And the call after that sends no PUT.
  const m = s.api.requests.length;
  await call('bo');
  assert.deepEqual(policyCalls(m, 'bo').filter((r) => r.verb !== 'get'), []);
});

test('a policy without our spec hash (an older build made it) is replaced too', async () => {
  await s.restart();	// the stack's own configuration, before and after
  await call('cy');
  const old = s.api.get('networkpolicies', 'vivarium-cy');
  // As an older build wrote it: the same spec, no annotations.
  const r = await fetchPut(old, (o) => { delete o.metadata.annotations; });
  assert.equal(r, 200);
  // This build started on them (ensure runs on a user's first call).
  await s.restart();
  const n = s.api.requests.length;
  await call('cy');
  const pc = policyCalls(n, 'cy');
  assert.deepEqual(pc.map((q) => `${q.verb} ${q.status}`), ['get 200', 'update 200']);
  assert.match(s.api.get('networkpolicies', 'vivarium-cy').metadata.annotations['vivarium.io/spec-hash'], /^[0-9a-f]{32}$/);
  assert.match(s.sv.stderr(), /cy: replaced NetworkPolicy vivarium-cy \(it had no spec hash of ours: only its hash\)/);
});

test('409 Conflict on the PUT (changed since we read it): read again and PUT once more', async () => {
  await call('dee');
  await s.restart({ kube: `supervisor_selector: ${SUP},tier=back` });
  const rule = s.api.inject({ verb: 'update', resource: 'networkpolicies', name: 'vivarium-dee', status: 409, reason: 'Conflict',
    message: 'Operation cannot be fulfilled on networkpolicies.networking.k8s.io "vivarium-dee": the object has been modified; please apply your changes to the latest version and try again', times: 1 });
  const n = s.api.requests.length;
  await call('dee');
  assert.equal(rule.hits, 1);
  assert.deepEqual(policyCalls(n, 'dee').map((q) => `${q.verb} ${q.status}`), ['get 200', 'update 409', 'get 200', 'update 200']);
  assert.equal(s.api.get('networkpolicies', 'vivarium-dee').spec.ingress[0].from[0].podSelector.matchLabels.tier, 'back');
});

test('409 twice: the call fails with a clear error; the next one works', async () => {
  await call('eve');
  await s.restart({ kube: `supervisor_selector: ${SUP},tier=side` });
  s.api.inject({ verb: 'update', resource: 'networkpolicies', name: 'vivarium-eve', status: 409, reason: 'Conflict', message: 'modified', times: 2 });
  const r = await s.sv.post(init, { userId: 'eve' });
  assert.ok(r.status >= 400, `status ${r.status}`);
  assert.match(r.json?.error?.message ?? r.text, /NetworkPolicy vivarium-eve changed under us twice/);
  s.api.clearFaults();
  await call('eve');
  assert.equal(s.api.get('networkpolicies', 'vivarium-eve').spec.ingress[0].from[0].podSelector.matchLabels.tier, 'side');
});

test('403 on update (a Role without it): a clear error naming the verb; the policy is left as it was', async () => {
  await call('fay');
  const old = s.api.get('networkpolicies', 'vivarium-fay');
  await s.restart({ kube: `supervisor_selector: ${SUP},tier=top` });
  s.api.inject({ verb: 'update', resource: 'networkpolicies', status: 403 });
  const r = await s.sv.post(init, { userId: 'fay' });
  assert.ok(r.status >= 400, `status ${r.status}`);
  const msg = r.json?.error?.message ?? r.text;
  assert.match(msg, /needs the verb "update" on "networkpolicies"/, msg);
  assert.deepEqual(s.api.get('networkpolicies', 'vivarium-fay'), old, 'untouched');
  s.api.clearFaults();
  await call('fay');
});

test('a larger limits.workspace: the claim keeps its size, one warning per user saying how to grow it', async () => {
  await call('gus');
  const size = s.api.get('persistentvolumeclaims', 'vivarium-gus-workspace').spec.resources.requests.storage;
  await s.restart({ extra: 'limits:\n  workspace: 9g' });
  const n = s.api.requests.length;
  await call('gus');
  // Through ensure again: the Pod deleted behind the supervisor's back.
  assert.equal((await kube(s.api).req('DELETE', `/api/v1/namespaces/${NS}/pods/vivarium-gus`)).status, 200);
  await until(() => s.api.pod('vivarium-gus') === null, { what: 'the Pod gone' });
  await call('gus');
  assert.equal(s.api.get('persistentvolumeclaims', 'vivarium-gus-workspace').spec.resources.requests.storage, size, 'not resized');
  assert.deepEqual(s.api.requests.slice(n).filter((q) => q.resource === 'persistentvolumeclaims' && !['get', 'list'].includes(q.verb))
    .map((q) => `${q.method} ${q.path}`), [], 'the claim only read');
  const warns = s.sv.stderr().split('\n').filter((l) => /gus: claim vivarium-gus-workspace keeps its size/.test(l));
  assert.equal(warns.length, 1, warns.join('\n'));
  assert.match(warns[0], /kubectl -n vivarium edit pvc vivarium-gus-workspace/);
  // A new user gets the new size.
  await call('hal');
  assert.equal(s.api.get('persistentvolumeclaims', 'vivarium-hal-workspace').spec.resources.requests.storage, String(9 * 1024 ** 3));
  assert.ok(!/hal: claim .* keeps its size/.test(s.sv.stderr()));
});

// Replaces a stored policy behind the supervisor's back; the status.
async function fetchPut(obj, edit) {
  // What a client sends: not the server's own fields (uid, managedFields...).
  const o = { apiVersion: obj.apiVersion, kind: obj.kind, spec: structuredClone(obj.spec),
    metadata: { name: obj.metadata.name, labels: obj.metadata.labels, annotations: obj.metadata.annotations,
      resourceVersion: obj.metadata.resourceVersion } };
  edit(o);
  return (await kube(s.api).req('PUT', `${NPP}/${o.metadata.name}`, o)).status;
}
