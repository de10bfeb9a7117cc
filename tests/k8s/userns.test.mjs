// userns.test.mjs: kubernetes.user_namespace.  auto gives Pods a user
// namespace of their own (hostUsers: false, the image's user inside) on an
// API server of 1.33 or newer, where the feature is on by default; an API
// server that drops the field (its feature gate off) gets the Pod deleted
// and the request refused, never the image's uid on the node; false keeps
// the user's own uid, above the usual subordinate id ranges.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './stack.mjs';
import { until } from '../e2e/harness.mjs';
import { runPython, assertClean, withReport } from './lib.mjs';

let s;
before(async () => {
  s = await startStack();
  s.api.version = { major: '1', minor: '33', gitVersion: 'v1.33.1-fake' };
  await s.restart();
});
after(async () => { await s?.stop(); });
afterEach(() => assertClean(s.api));

const podOf = (u) => s.api.pod(`vivarium-${u}`);
const posted = (u) => s.api.calls('create', 'pods').filter((r) => r.body?.metadata?.name === `vivarium-${u}`);

test('auto on Kubernetes 1.33: hostUsers false, the image\'s user inside, and it works', async () => {
  const c = await s.sv.client('ulla');
  const r = await withReport(s.api, 'ulla', () => runPython(c, "print('hello from', 'ulla')"));
  assert.match(r.text, /hello from ulla/);
  await c.close();
  const pod = podOf('ulla');
  assert.equal(pod.spec.hostUsers, false);
  assert.equal(pod.spec.securityContext.runAsUser, 1000);
  assert.equal(pod.spec.securityContext.runAsGroup, 1000);
  assert.equal(pod.spec.securityContext.fsGroup, 1000);
  assert.equal(pod.spec.securityContext.runAsNonRoot, true);
  assert.match(s.sv.stderr(), /user_namespace auto: Kubernetes v1\.33\.1-fake, so sandbox Pods get a user namespace of their own/);
  assert.equal(s.api.calls('version').length >= 1, true);
});

test('an API server that drops hostUsers: the Pod is deleted at once and the call refused, saying what to set', async () => {
  s.api.dropPodFields = ['hostUsers'];
  try {
    const res = await s.sv.post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { userId: 'vera' });
    assert.equal(res.status, 500, res.text);
    assert.match(res.text, /dropped hostUsers: false/);
    assert.match(res.text, /kubernetes\.user_namespace: false/);
    assert.equal(posted('vera').length, 1);
    assert.ok(s.api.calls('delete', 'pods').some((q) => q.name === 'vivarium-vera'), 'the Pod deleted');
    await until(() => !podOf('vera'), { what: 'vera\'s Pod gone' });
  } finally {
    s.api.dropPodFields = [];
  }
});

test('user_namespace false: the user\'s own uid on the node, above the usual subordinate ranges', async () => {
  await s.restart({ kube: 'user_namespace: false' });
  const c = await s.sv.client('wes');
  const r = await withReport(s.api, 'wes', () => runPython(c, 'import os\nprint("uid", os.getuid())'));
  await c.close();
  const pod = podOf('wes');
  assert.equal(pod.spec.hostUsers, undefined);
  const uid = pod.spec.securityContext.runAsUser;
  assert.ok(uid > 0x78000000 && uid < 2 ** 31, `uid ${uid}`);
  if (process.getuid() === 0) assert.match(r.text, new RegExp(`uid ${uid}`));
  // Ulla's Pod was made with a user namespace: her next call replaces it.
  const c2 = await s.sv.client('ulla');
  await withReport(s.api, 'ulla', () => runPython(c2, 'print(1)'));
  await c2.close();
  assert.equal(podOf('ulla').spec.hostUsers, undefined);
});
