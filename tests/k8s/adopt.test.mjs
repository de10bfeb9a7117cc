// adopt.test.mjs: what others left in the namespace, and what happens
// behind the supervisor's back: objects made by an earlier installation,
// a claim made between our GET and our POST (409), a Pod deleted or an
// agent restarted by the kubelet while the supervisor holds its address,
// a changed configuration, uid slots, and the service account of a Pod
// (in-cluster, with a token that rotates).
import { test, before, after, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { startStack } from './stack.mjs';
import { until } from '../e2e/harness.mjs';
import { runPython, assertClean } from './lib.mjs';
import { kube } from './kclient.mjs';
import * as f from './fixtures/objects.mjs';

// kubernetes.uid_base's default: above the usual subordinate id ranges.
const BASE = 0x78000000;
const ready = (p) => p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
async function call(s, u, code = 'print(6*7)') {
  const c = await s.sv.client(u);
  const r = await runPython(c, code);
  await c.close();
  return r.text;
}

describe('adopt and edge cases', () => {
  let s;
  before(async () => { s = await startStack(); });
  after(async () => { await s?.stop(); });
  afterEach(() => { s.api.clearFaults(); assertClean(s.api); });

  test('a claim and a policy left by an earlier installation are used, the claim\'s uid kept, the policy updated in place', async () => {
    const pvc = f.pvc('dave');
    pvc.metadata.annotations['vivarium.io/uid'] = String(BASE + 42);
    s.api.seed('persistentvolumeclaims', pvc);
    s.api.seed('networkpolicies', f.networkPolicy('dave', { agentPort: s.agentPort }));
    assert.match(await call(s, 'dave'), /42/);
    assert.equal(s.api.calls('create', 'persistentvolumeclaims').filter((q) => q.body.metadata.name === 'vivarium-dave-workspace').length, 0);
    assert.equal(s.api.calls('create', 'networkpolicies').filter((q) => q.body.metadata.name === 'vivarium-dave').length, 0);
    // Theirs has no spec hash of ours (and another podSelector): replaced by PUT.
    assert.deepEqual(s.api.calls('update', 'networkpolicies').filter((q) => q.name === 'vivarium-dave').map((q) => q.status), [200]);
    assert.equal(s.api.calls('delete', 'networkpolicies').length, 0);
    assert.equal(s.api.pod('vivarium-dave').spec.securityContext.runAsUser, BASE + 42, 'the uid the claim holds');
  });

  test('409 AlreadyExists on creating the claim (made between our GET and POST): it is read and used', async () => {
    const pvc = f.pvc('erin');
    pvc.metadata.annotations['vivarium.io/uid'] = String(BASE + 77);
    s.api.seed('persistentvolumeclaims', pvc);
    // The first GET does not see it yet, as if it were made a moment later.
    s.api.inject({ verb: 'get', resource: 'persistentvolumeclaims', name: 'vivarium-erin-workspace', status: 404, reason: 'NotFound',
      message: 'persistentvolumeclaims "vivarium-erin-workspace" not found', times: 1 });
    assert.match(await call(s, 'erin'), /42/);
    const posts = s.api.calls('create', 'persistentvolumeclaims').filter((q) => q.body.metadata.name === 'vivarium-erin-workspace');
    assert.deepEqual(posts.map((q) => q.status), [409]);
    assert.equal(s.api.pod('vivarium-erin').spec.securityContext.runAsUser, BASE + 77, 'theirs is the slot');
  });

  test('uid slots: each user its own, the lowest free one, never one another claim holds', async () => {
    for (const u of ['fred', 'gina', 'hank']) assert.match(await call(s, u), /42/);
    const uids = s.api.objects('pods').map((p) => p.spec.securityContext.runAsUser);
    assert.equal(new Set(uids).size, uids.length, `distinct uids: ${uids}`);
    const claims = Object.fromEntries(s.api.objects('persistentvolumeclaims').map((c) => [c.metadata.labels['vivarium.io/user'], Number(c.metadata.annotations['vivarium.io/uid'])]));
    for (const p of s.api.objects('pods')) assert.equal(p.spec.securityContext.runAsUser, claims[p.metadata.labels['vivarium.io/user']]);
    assert.ok(uids.every((u) => u > BASE && u < BASE + 100), `from uid_base up: ${uids}`);
    assert.ok(!uids.includes(BASE + 42) || claims.dave === BASE + 42);
  });

  test('a Pod deleted behind the supervisor\'s back: the next call makes a new one on the same claim', async () => {
    await call(s, 'ivan', "open('f.txt','w').write('ivan')\nprint('ok')");
    const old = s.api.pod('vivarium-ivan');
    const r = await kube(s.api).req('DELETE', '/api/v1/namespaces/vivarium/pods/vivarium-ivan');
    assert.equal(r.status, 200);
    await until(() => s.api.pod('vivarium-ivan') === null, { what: 'gone' });
    const out = await call(s, 'ivan', "print(open('f.txt').read())");
    assert.match(out, /^ivan$/m);
    const now = s.api.pod('vivarium-ivan');
    assert.ok(now && ready(now));
    assert.notEqual(now.metadata.uid, old.metadata.uid);
  });

  test('the agent killed and restarted by the kubelet (same Pod, same address): the next call works', async () => {
    await call(s, 'jill');
    const r = s.api.kubelet.running('vivarium-jill');
    r.proc.kill('SIGKILL');
    await until(() => s.api.pod('vivarium-jill').status.containerStatuses[0].restartCount === 1 && ready(s.api.pod('vivarium-jill')), { what: 'restarted and Ready' });
    assert.match(await call(s, 'jill'), /42/);
  });

  test('a Pod of another configuration is replaced on the next call; the claim and its files stay', async () => {
    await call(s, 'kate', "open('k.txt','w').write('kate')\nprint('ok')");
    const old = s.api.pod('vivarium-kate');
    await s.restart(); // same config: adopted
    await call(s, 'kate');
    assert.equal(s.api.pod('vivarium-kate').metadata.uid, old.metadata.uid, 'same configuration: adopted');
    // Another memory limit: the Pod must be made again.
    await s.restart({ extra: 'limits:\n  memory: 1g' });
    const out = await call(s, 'kate', "print(open('k.txt').read())");
    assert.match(out, /^kate$/m);
    const now = s.api.pod('vivarium-kate');
    assert.notEqual(now.metadata.uid, old.metadata.uid, 'replaced');
    assert.ok(['1073741824', '1Gi'].includes(now.spec.containers[0].resources.limits.memory), now.spec.containers[0].resources.limits.memory);
    assert.equal(s.api.calls('create', 'persistentvolumeclaims').filter((q) => q.body.metadata.name === 'vivarium-kate-workspace' && q.status === 201).length, 1);
  });
});

describe('in-cluster: the service account\'s token and CA, the token re-read as it rotates', () => {
  let s;
  before(async () => { s = await startStack({ inCluster: true }); });
  after(async () => { await s?.stop(); });
  afterEach(() => assertClean(s.api));

  test('a call works with KUBERNETES_SERVICE_HOST/_PORT and the service account files', async () => {
    assert.match(await call(s, 'lou'), /42/);
    assert.ok(s.api.requests.every((r) => r.authorization === `Bearer ${s.api.token}`));
  });

  test('a rotated token is used from the next request on', async () => {
    const fresh = 'rotated-' + 'x'.repeat(30);
    // As the kubelet does: a new file moved into place.
    writeFileSync(join(s.saDir, 'token.new'), fresh);
    renameSync(join(s.saDir, 'token.new'), join(s.saDir, 'token'));
    s.api.token = fresh;
    const n = s.api.requests.length;
    assert.match(await call(s, 'max'), /42/);
    const later = s.api.requests.slice(n);
    assert.ok(later.length > 0);
    assert.ok(later.every((r) => r.authorization === `Bearer ${fresh}` && r.status !== 401), 'every later request with the new token');
    assert.ok(!s.sv.stderr().includes(fresh), 'the token is never logged');
  });
});
