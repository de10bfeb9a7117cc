// fakeapi.test.mjs: the fake API server and kubelet answer as the contract
// and the real API describe, before anything of ours talks to them: the
// supervisor's tests are only as good as this stand-in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kube } from './kclient.mjs';
import { until, sleep, freePort, connectClient } from '../e2e/harness.mjs';
import { startApi, runPython } from './lib.mjs';
import { parseLabelSelector, parseFieldSelector, allowedBy } from './fakeapi.mjs';
import * as f from './fixtures/objects.mjs';

const NS = 'vivarium';
const P = `/api/v1/namespaces/${NS}`;
const NP = `/apis/networking.k8s.io/v1/namespaces/${NS}/networkpolicies`;
let api, k, port;

before(async () => {
  // A port of our own: something bound to 0.0.0.0:8700 on this machine
  // would take it from every loopback address.
  port = await freePort();
  api = await startApi({ namespace: NS });
  k = kube(api);
});
after(async () => { await api?.close(); });

const isStatus = (j, code, reason) => {
  assert.equal(j.kind, 'Status');
  assert.equal(j.apiVersion, 'v1');
  assert.deepEqual(j.metadata, {});
  assert.equal(j.status, code < 300 ? 'Success' : 'Failure');
  assert.equal(j.code, code);
  if (reason) assert.equal(j.reason, reason);
};

test('TLS with its own CA: a client without the CA is refused, one with it gets /version', async () => {
  await assert.rejects(new Promise((res, rej) => {
    https.get(`${api.url}/version`, { agent: false }, res).on('error', rej);
  }), /self.signed|unable to verify|certificate/i);
  const r = await k.req('GET', '/version');
  assert.equal(r.status, 200);
  assert.equal(r.json.major, '1');
  assert.match(r.json.gitVersion, /^v1\.\d+/);
});

test('a wrong or missing bearer token gets 401 Unauthorized as a Status', async () => {
  for (const token of ['wrong', '']) {
    const r = await kube(api, { token }).req('GET', `${P}/pods`);
    assert.equal(r.status, 401);
    isStatus(r.json, 401, 'Unauthorized');
    assert.equal(r.json.message, 'Unauthorized');
  }
});

test('paths outside the contract are 404 and recorded; other namespaces are forbidden', async () => {
  const n = api.unexpected.length;
  let r = await k.req('GET', '/api/v1/namespaces/vivarium/secrets');
  assert.equal(r.status, 404);
  isStatus(r.json, 404, 'NotFound');
  r = await k.req('GET', '/apis/networking.k8s.io/v1/namespaces/vivarium/pods');
  assert.equal(r.status, 404);
  r = await k.req('PUT', `${P}/pods/x`, {});
  assert.equal(r.status, 405);
  assert.equal(api.unexpected.length, n + 3);
  api.unexpected.length = n;
  r = await k.req('GET', '/api/v1/namespaces/kube-system/pods');
  assert.equal(r.status, 403);
  isStatus(r.json, 403, 'Forbidden');
  assert.equal(r.json.message, 'pods is forbidden: User "system:serviceaccount:vivarium:vivarium-supervisor" cannot list resource "pods" in API group "" in the namespace "kube-system"');
});

test('create sets uid, resourceVersion, creationTimestamp; 409 AlreadyExists; get; 404 NotFound', async () => {
  let r = await k.req('POST', `${P}/persistentvolumeclaims`, f.pvc('ann'));
  assert.equal(r.status, 201, r.text);
  const m = r.json.metadata;
  assert.match(m.uid, /^[0-9a-f-]{36}$/);
  assert.match(m.resourceVersion, /^\d+$/);
  assert.match(m.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(m.namespace, NS);
  assert.deepEqual(m.finalizers, ['kubernetes.io/pvc-protection']);
  assert.equal(r.json.status.phase, 'Pending');
  r = await k.req('POST', `${P}/persistentvolumeclaims`, f.pvc('ann'));
  assert.equal(r.status, 409);
  isStatus(r.json, 409, 'AlreadyExists');
  assert.equal(r.json.message, 'persistentvolumeclaims "vivarium-ann-workspace" already exists');
  assert.deepEqual(r.json.details, { name: 'vivarium-ann-workspace', kind: 'persistentvolumeclaims' });
  r = await k.req('POST', NP, f.networkPolicy('ann'));
  assert.equal(r.status, 201);
  r = await k.req('POST', NP, f.networkPolicy('ann'));
  assert.deepEqual(r.json.details, { name: 'vivarium-ann', group: 'networking.k8s.io', kind: 'networkpolicies' });
  assert.equal(r.json.message, 'networkpolicies.networking.k8s.io "vivarium-ann" already exists');
  r = await k.req('GET', `${P}/persistentvolumeclaims/vivarium-ann-workspace`);
  assert.equal(r.status, 200);
  await until(async () => (await k.req('GET', `${P}/persistentvolumeclaims/vivarium-ann-workspace`)).json.status.phase === 'Bound', { what: 'the claim bound' });
  r = await k.req('GET', `${P}/pods/vivarium-nobody`);
  assert.equal(r.status, 404);
  isStatus(r.json, 404, 'NotFound');
  assert.equal(r.json.message, 'pods "vivarium-nobody" not found');
});

test('an object validate() refuses is answered 422 Invalid and recorded', async () => {
  const bad = f.pod('bad');
  delete bad.spec.containers[0].securityContext.capabilities;
  bad.spec.automountServiceAccountToken = 'no';
  const r = await k.req('POST', `${P}/pods`, bad);
  assert.equal(r.status, 422);
  isStatus(r.json, 422, 'Invalid');
  assert.match(r.json.message, /^Pod "vivarium-bad" is invalid: /);
  assert.ok(r.json.details.causes.some((c) => c.field === 'spec.automountServiceAccountToken'), JSON.stringify(r.json.details));
  assert.equal(api.invalid.length, 1);
  assert.equal(api.pod('vivarium-bad'), null);
  api.invalid.length = 0;
  // Wrong kind for the path, wrong namespace in the body, not JSON.
  assert.equal((await k.req('POST', `${P}/pods`, f.pvc('x'))).status, 400);
  const other = f.pod('x');
  other.metadata.namespace = 'default';
  assert.equal((await k.req('POST', `${P}/pods`, other)).status, 400);
  assert.equal((await k.req('POST', `${P}/pods`, '{nope')).status, 400);
});

test('list with labelSelector: matching items, without kind/apiVersion, the list resourceVersion', async () => {
  await k.req('POST', `${P}/persistentvolumeclaims`, f.pvc('bea'));
  const other = f.pvc('zed');
  other.metadata.labels = { 'app.kubernetes.io/name': 'something-else' };
  await k.req('POST', `${P}/persistentvolumeclaims`, other);
  const r = await k.req('GET', `${P}/persistentvolumeclaims?labelSelector=${encodeURIComponent(f.LABEL_SELECTOR)}`);
  assert.equal(r.status, 200);
  assert.equal(r.json.kind, 'PersistentVolumeClaimList');
  assert.equal(r.json.apiVersion, 'v1');
  assert.match(r.json.metadata.resourceVersion, /^\d+$/);
  const names = r.json.items.map((i) => i.metadata.name).sort();
  assert.deepEqual(names, ['vivarium-ann-workspace', 'vivarium-bea-workspace']);
  assert.equal(r.json.items[0].kind, undefined);
  const all = await k.req('GET', `${P}/persistentvolumeclaims`);
  assert.equal(all.json.items.length, 3);
  // limit and continue page through the rest.
  const page = await k.req('GET', `${P}/persistentvolumeclaims?limit=2`);
  assert.equal(page.json.items.length, 2);
  assert.equal(page.json.metadata.remainingItemCount, 1);
  const rest = await k.req('GET', `${P}/persistentvolumeclaims?limit=2&continue=${encodeURIComponent(page.json.metadata.continue)}`);
  assert.equal(rest.json.items.length, 1);
  assert.equal(rest.json.metadata.continue, undefined);
  const one = await k.req('GET', `${P}/persistentvolumeclaims?labelSelector=${encodeURIComponent('vivarium.io/user=bea')}`);
  assert.deepEqual(one.json.items.map((i) => i.metadata.name), ['vivarium-bea-workspace']);
});

test('selectors parse as the API server\'s do', () => {
  const l = { a: '1', b: '2' };
  assert.ok(parseLabelSelector('a=1,b==2')(l));
  assert.ok(!parseLabelSelector('a=1,b!=2')(l));
  assert.ok(parseLabelSelector('a, !c')(l));
  assert.ok(parseLabelSelector('a in (1,3),b notin (3)')(l));
  assert.ok(!parseLabelSelector('c')(l));
  assert.throws(() => parseLabelSelector('a=1,=2'), /unable to parse/);
  assert.ok(parseFieldSelector('metadata.name=x')({ metadata: { name: 'x' } }));
  assert.ok(!parseFieldSelector('metadata.name=x')({ metadata: { name: 'y' } }));
  assert.throws(() => parseFieldSelector('spec.nodeName=x'), /not supported/);
});

test('the kubelet runs a Pod as a real agent on its own address; the workspace outlives the Pod', async () => {
  await k.req('POST', `${P}/persistentvolumeclaims`, f.pvc('cat'));
  const secret = 'x'.repeat(40);
  const created = await k.req('POST', `${P}/pods`, f.pod('cat', { uid: 100007, secret, agentPort: port, env: [{ name: 'FROM_POD', value: 'yes' }] }));
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json.status.phase, 'Pending');
  assert.equal(created.json.spec.dnsPolicy, 'ClusterFirst');
  // Watch from the create's resourceVersion, for this Pod only.
  const w = k.watch(`${P}/pods?watch=1&fieldSelector=${encodeURIComponent('metadata.name=vivarium-cat')}&resourceVersion=${created.json.metadata.resourceVersion}&timeoutSeconds=20`);
  const ready = (e) => e.object.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  await w.until((evs) => evs.some(ready));
  w.close();
  assert.ok(w.events.every((e) => e.type === 'MODIFIED' && e.object.metadata.name === 'vivarium-cat'));
  const pod = api.pod('vivarium-cat');
  assert.equal(pod.status.phase, 'Running');
  assert.match(pod.status.podIP, /^127\.0\.0\.\d+$/);
  assert.notEqual(pod.status.podIP, '127.0.0.1');
  // The agent answers on the Pod's address and port, and has the Pod's env.
  const url = `http://${pod.status.podIP}:${port}/mcp`;
  const auth = { headers: { Authorization: `Bearer ${secret}` }, name: 'vivarium-k8s-test' };
  const c = await connectClient(url, auth);
  let r = await runPython(c, `import os
open('keep.txt', 'w').write('kept')
print(os.environ.get('FROM_POD'), os.getcwd() == os.environ.get('VIVARIUM_WORKDIR'), os.getuid())`);
  await c.close();
  assert.match(r.text, /^yes True/m);
  if (process.getuid() === 0) assert.match(r.text, /True 100007/);
  const ws = api.kubelet.volumeDir('vivarium-cat-workspace');
  assert.equal(readFileSync(join(ws, 'keep.txt'), 'utf8'), 'kept');
  // Delete: 200 with the Pod carrying deletionTimestamp, then gone; the agent stopped.
  const agent = api.kubelet.running('vivarium-cat').proc;
  const del = await k.req('DELETE', `${P}/pods/vivarium-cat`);
  assert.equal(del.status, 200);
  assert.equal(del.json.kind, 'Pod');
  assert.match(del.json.metadata.deletionTimestamp, /Z$/);
  assert.equal(typeof del.json.metadata.deletionGracePeriodSeconds, 'number');
  await until(() => api.pod('vivarium-cat') === null, { what: 'the Pod gone' });
  assert.notEqual(agent.exitCode ?? agent.signalCode, null, 'the agent was stopped');
  assert.equal((await k.req('GET', `${P}/pods/vivarium-cat`)).status, 404);
  // The claim's directory is kept; a new Pod sees the file, at a new address.
  assert.ok(existsSync(join(ws, 'keep.txt')));
  await k.req('POST', `${P}/pods`, f.pod('cat', { uid: 100007, secret, agentPort: port }));
  const again = await until(() => api.pod('vivarium-cat')?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') && api.pod('vivarium-cat'), { what: 'the new Pod Ready' });
  assert.notEqual(again.status.podIP, pod.status.podIP);
  const c2 = await connectClient(`http://${again.status.podIP}:${port}/mcp`, auth);
  r = await runPython(c2, "print(open('keep.txt').read())");
  await c2.close();
  assert.match(r.text, /kept/);
});

test('deleting a claim in use waits for its Pod (pvc-protection); the workspace goes with it', async () => {
  const ws = api.kubelet.volumeDir('vivarium-cat-workspace');
  const r = await k.req('DELETE', `${P}/persistentvolumeclaims/vivarium-cat-workspace`);
  assert.equal(r.status, 200);
  assert.ok(r.json.metadata.deletionTimestamp);
  await sleep(200);
  assert.ok(api.get('persistentvolumeclaims', 'vivarium-cat-workspace'), 'kept while the Pod uses it');
  await k.req('DELETE', `${P}/pods/vivarium-cat`);
  await until(() => api.get('persistentvolumeclaims', 'vivarium-cat-workspace') === null, { what: 'the claim gone' });
  assert.ok(!existsSync(ws));
});

test('a NetworkPolicy update (PUT): the stored resourceVersion or 409 Conflict; validated; name and namespace checked', async () => {
  const cur = (await k.req('GET', `${NP}/vivarium-ann`)).json;
  const next = f.networkPolicy('ann', { agentPort: 9999 });
  // No resourceVersion, a stale one: refused, nothing changed.
  let r = await k.req('PUT', `${NP}/vivarium-ann`, next);
  assert.equal(r.status, 422);
  isStatus(r.json, 422, 'Invalid');
  next.metadata.resourceVersion = String(Number(cur.metadata.resourceVersion) - 1);
  r = await k.req('PUT', `${NP}/vivarium-ann`, next);
  assert.equal(r.status, 409);
  isStatus(r.json, 409, 'Conflict');
  assert.equal(r.json.message, 'Operation cannot be fulfilled on networkpolicies.networking.k8s.io "vivarium-ann": the object has been modified; please apply your changes to the latest version and try again');
  assert.equal(api.get('networkpolicies', 'vivarium-ann').spec.ingress[0].ports[0].port, 8700);
  // Another name or namespace than the URL's, another kind, not there.
  next.metadata.resourceVersion = cur.metadata.resourceVersion;
  assert.equal((await k.req('PUT', `${NP}/vivarium-bob`, next)).status, 400);
  assert.equal((await k.req('PUT', `${NP}/vivarium-ann`, { ...next, metadata: { ...next.metadata, namespace: 'default' } })).status, 400);
  assert.equal((await k.req('PUT', `${NP}/vivarium-ann`, f.pvc('ann'))).status, 400);
  const none = f.networkPolicy('nobody');
  none.metadata.resourceVersion = '1';
  r = await k.req('PUT', `${NP}/vivarium-nobody`, none);
  assert.equal(r.status, 404);
  assert.equal(api.get('networkpolicies', 'vivarium-nobody'), null, 'no create on update');
  // What validate() refuses is 422 and recorded, as for a create.
  const bad = structuredClone(next);
  bad.spec.policyTypes = ['Sideways'];
  r = await k.req('PUT', `${NP}/vivarium-ann`, bad);
  assert.equal(r.status, 422);
  assert.equal(api.invalid.length, 1);
  api.invalid.length = 0;
  // The right one: stored, uid kept, a new resourceVersion and generation.
  r = await k.req('PUT', `${NP}/vivarium-ann`, next);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.metadata.uid, cur.metadata.uid);
  assert.equal(r.json.metadata.creationTimestamp, cur.metadata.creationTimestamp);
  assert.ok(Number(r.json.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
  assert.equal(r.json.metadata.generation, 2);
  assert.equal(api.get('networkpolicies', 'vivarium-ann').spec.ingress[0].ports[0].port, 9999);
  // The old resourceVersion again: someone (we) changed it meanwhile.
  assert.equal((await k.req('PUT', `${NP}/vivarium-ann`, next)).status, 409);
  // PUT stays unserved on what the contract does not update.
  const n = api.unexpected.length;
  assert.equal((await k.req('PUT', `${P}/persistentvolumeclaims/vivarium-ann-workspace`, f.pvc('ann'))).status, 405);
  assert.equal(api.unexpected.length, n + 1);
  api.unexpected.length = n;
});

test('a NetworkPolicy delete answers a Success Status and the object is gone at once', async () => {
  const r = await k.req('DELETE', `${NP}/vivarium-ann`);
  assert.equal(r.status, 200);
  isStatus(r.json, 200);
  assert.equal(r.json.details.name, 'vivarium-ann');
  assert.equal(r.json.details.kind, 'networkpolicies');
  assert.match(r.json.details.uid, /^[0-9a-f-]{36}$/);
  assert.equal(api.get('networkpolicies', 'vivarium-ann'), null);
  assert.equal((await k.req('DELETE', `${NP}/vivarium-ann`)).status, 404);
});

test('watch: without resourceVersion the current objects come as ADDED; timeoutSeconds ends the stream', async () => {
  const w = k.watch(`${P}/persistentvolumeclaims?watch=1&allowWatchBookmarks=true&labelSelector=${encodeURIComponent(f.LABEL_SELECTOR)}&timeoutSeconds=1`);
  const end = await w.done;
  assert.equal(end.status, 200);
  assert.ok(end.ended);
  const types = end.events.map((e) => e.type);
  assert.equal(types.at(-1), 'BOOKMARK', 'asked for, a bookmark comes');
  assert.deepEqual(Object.keys(end.events.at(-1).object.metadata), ['resourceVersion']);
  assert.ok(types.length >= 3 && types.slice(0, -1).every((t) => t === 'ADDED'), JSON.stringify(types));
});

test('watch: a compacted resourceVersion gets one ERROR event with a 410 Expired Status', async () => {
  const old = api.resourceVersion;
  await k.req('POST', NP, f.networkPolicy('dan'));
  api.compact();
  const w = k.watch(`${NP}?watch=1&resourceVersion=${old}`);
  const end = await w.done;
  assert.equal(end.status, 200);
  assert.equal(end.events.length, 1);
  assert.equal(end.events[0].type, 'ERROR');
  isStatus(end.events[0].object, 410, 'Expired');
  assert.match(end.events[0].object.message, /^too old resource version: \d+ \(\d+\)$/);
});

test('faults: 403 and 500 as Status objects, a dropped watch, the server down and back', async () => {
  const rule = api.inject({ verb: 'create', resource: 'pods', status: 403, times: 1 });
  let r = await k.req('POST', `${P}/pods`, f.pod('eve'));
  assert.equal(r.status, 403);
  isStatus(r.json, 403, 'Forbidden');
  assert.equal(r.json.message, 'pods is forbidden: User "system:serviceaccount:vivarium:vivarium-supervisor" cannot create resource "pods" in API group "" in the namespace "vivarium"');
  assert.equal(rule.hits, 1);
  api.inject({ verb: 'get', resource: 'pods', status: 500, times: 1 });
  r = await k.req('GET', `${P}/pods/x`);
  assert.equal(r.status, 500);
  isStatus(r.json, 500, 'InternalError');
  assert.equal((await k.req('GET', `${P}/pods/x`)).status, 404, 'times: 1');
  const w = k.watch(`${P}/pods?watch=1&resourceVersion=${api.resourceVersion}`);
  await until(() => api.openWatches > 0, { what: 'the watch open' });
  api.dropWatches();
  const end = await w.done;
  assert.ok(!end.ended || end.aborted || end.error, JSON.stringify(end));
  await api.down();
  await assert.rejects(k.req('GET', '/version'), /ECONNREFUSED/);
  await api.up();
  assert.equal((await k.req('GET', '/version')).status, 200);
  api.clearFaults();
});

test('slow and never Ready: the kubelet holds Ready back as told', async () => {
  await k.req('POST', `${P}/persistentvolumeclaims`, f.pvc('fay'));
  api.kubelet.neverReady = true;
  await k.req('POST', `${P}/pods`, f.pod('fay', { agentPort: port }));
  await until(() => api.pod('vivarium-fay')?.status.phase === 'Running', { what: 'Running' });
  await sleep(500);
  assert.ok(api.pod('vivarium-fay').status.conditions.some((c) => c.type === 'Ready' && c.status === 'False'));
  api.kubelet.neverReady = false;
  await until(() => api.pod('vivarium-fay').status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'), { what: 'Ready' });
  await k.req('DELETE', `${P}/pods/vivarium-fay`);
  await until(() => api.pod('vivarium-fay') === null, { what: 'gone' });
});

test('RBAC: with a Role, what its rules do not allow is 403 and recorded', async () => {
  const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'r' },
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
      { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['*'], resourceNames: ['vivarium-a'] }] };
  assert.ok(allowedBy(role, 'get', 'pods', 'x'));
  assert.ok(!allowedBy(role, 'watch', 'pods'));
  assert.ok(!allowedBy(role, 'get', 'persistentvolumeclaims', 'x'), 'another resource');
  assert.ok(allowedBy(role, 'delete', 'networkpolicies', 'vivarium-a'));
  assert.ok(!allowedBy(role, 'delete', 'networkpolicies', 'vivarium-b'), 'resourceNames');
  assert.ok(!allowedBy(role, 'create', 'networkpolicies'), 'resourceNames never allow a create');
  const r = await startApi({ namespace: NS, rbac: role });
  try {
    const kr = kube(r);
    assert.equal((await kr.req('GET', `${P}/pods`)).status, 200);
    const w = await kr.req('GET', `${P}/pods?watch=1&timeoutSeconds=1`);
    assert.equal(w.status, 403);
    assert.match(w.json.message, /cannot watch resource "pods"/);
    assert.deepEqual(r.rbacDenied.map((q) => q.verb), ['watch']);
  } finally { await r.close(); }
});

test('every request was recorded with its verb', () => {
  assert.ok(api.calls('create', 'pods').length >= 3);
  assert.ok(api.calls('watch', 'pods').length >= 1);
  assert.ok(api.requests.every((r) => r.status), 'each has a status');
});
