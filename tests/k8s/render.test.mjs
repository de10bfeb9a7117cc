// render.test.mjs: `vivariumctl render --kubernetes USER` prints exactly the
// PVC, NetworkPolicy and Pod of the contract (k8s-spec, "Kubernetes
// objects"), each one valid for the API server and the restricted Pod
// Security level, for the default configuration and for one that sets
// every kubernetes: key.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { validate, parseDocuments } from './validate.mjs';
import { ctlBin } from '../e2e/harness.mjs';

const dir = mkdtempSync('/tmp/vk8s-render-');
after(() => rmSync(dir, { recursive: true, force: true }));
const keyHex = randomBytes(32).toString('hex');
const keyFile = join(dir, 'link.key');
writeFileSync(keyFile, keyHex + '\n');
chmodSync(keyFile, 0o600);

// The contract's agent secret: 32 random bytes in hex, new for each Pod.
const SECRET = /^[0-9a-f]{64}$/;

let lastStderr = '';
function render(user, extra = '', { expectFail = false } = {}) {
  const conf = join(dir, `sup-${randomBytes(3).toString('hex')}.yaml`);
  writeFileSync(conf, ['listen: 127.0.0.1:8799', 'token: abcdefabcdefabcdefabcdef', 'backend: kubernetes',
    `state_dir: ${join(dir, 'state')}`, 'image: localhost/vivarium-sandbox:0.1.0-k8s',
    `links:\n  key_file: ${keyFile}`, extra].join('\n') + '\n');
  const r = spawnSync(ctlBin, ['-f', conf, 'render', '--kubernetes', user], { encoding: 'utf8' });
  lastStderr = r.stderr;
  if (expectFail) return r;
  assert.equal(r.status, 0, `render failed: ${r.stderr}`);
  const docs = parseDocuments(r.stdout);
  // The YAML stream is JSON documents separated by --- lines.
  for (const chunk of r.stdout.split(/^---$/m).filter((s) => s.trim())) assert.doesNotThrow(() => JSON.parse(chunk), 'each document is JSON');
  return docs;
}

const labels = (u) => ({ 'app.kubernetes.io/managed-by': 'vivarium', 'app.kubernetes.io/name': 'vivarium-sandbox', 'vivarium.io/user': u });
const envOf = (pod) => Object.fromEntries(pod.spec.containers[0].env.map((e) => [e.name, e.value]));
// Quantities as numbers of bytes / millicores, whatever their spelling.
function bytes(q) {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
  assert.ok(m, `quantity ${q}`);
  const mult = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Number(m[1]) * (m[2] ? mult[m[2]] : 1);
}
const millicores = (q) => (String(q).endsWith('m') ? Number(String(q).slice(0, -1)) : Number(q) * 1000);

test('defaults: three valid objects with the contract\'s names, labels and fields', () => {
  const docs = render('alice', 'kubernetes:\n  namespace: vivarium\n  egress_proxy: 127.0.0.1:3128');
  assert.deepEqual(docs.map((d) => d.kind), ['PersistentVolumeClaim', 'NetworkPolicy', 'Pod']);
  for (const d of docs) assert.deepEqual(validate(d), [], `${d.kind} is valid`);
  const [pvc, np, pod] = docs;
  for (const d of docs) {
    assert.deepEqual(d.metadata.labels, labels('alice'));
    if (d.metadata.namespace !== undefined) assert.equal(d.metadata.namespace, 'vivarium');
  }
  assert.equal(pvc.metadata.name, 'vivarium-alice-workspace');
  assert.equal(np.metadata.name, 'vivarium-alice');
  assert.equal(pod.metadata.name, 'vivarium-alice');

  // PVC: ReadWriteOnce, the default workspace limit (5g), the uid annotation.
  assert.deepEqual(pvc.spec.accessModes, ['ReadWriteOnce']);
  assert.equal(bytes(pvc.spec.resources.requests.storage), 5 * 2 ** 30);
  assert.equal(pvc.spec.storageClassName, undefined);
  assert.match(pvc.metadata.annotations['vivarium.io/uid'], /^\d+$/);

  // NetworkPolicy: the user's Pod; ingress only from the supervisor on
  // the agent port, egress only to the proxy on its port; nothing else.
  assert.equal(np.spec.podSelector.matchLabels['vivarium.io/user'], 'alice');
  assert.equal(np.spec.podSelector.matchLabels['app.kubernetes.io/managed-by'], 'vivarium');
  assert.deepEqual([...np.spec.policyTypes].sort(), ['Egress', 'Ingress']);
  assert.equal(np.spec.ingress.length, 1);
  assert.deepEqual(np.spec.ingress[0].from, [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'vivarium-supervisor' } } }]);
  assert.deepEqual(np.spec.ingress[0].ports, [{ protocol: 'TCP', port: 8700 }]);
  assert.equal(np.spec.egress.length, 1);
  assert.deepEqual(np.spec.egress[0].to, [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'vivarium-egress' } } }]);
  assert.deepEqual(np.spec.egress[0].ports, [{ protocol: 'TCP', port: 3128 }]);

  // Pod.
  const s = pod.spec;
  assert.equal(s.automountServiceAccountToken, false);
  assert.equal(s.enableServiceLinks, false);
  assert.equal(s.restartPolicy, 'Always');
  assert.equal(s.runtimeClassName, undefined);
  const uid = Number(pvc.metadata.annotations['vivarium.io/uid']);
  assert.equal(uid, 0x78000000, 'uid_base (above the usual subordinate ranges) + slot 0');
  // user_namespace auto, no cluster to ask: as on Kubernetes 1.33 and
  // newer, a user namespace of its own and the image's user inside.
  assert.equal(s.hostUsers, false);
  assert.deepEqual(s.securityContext, { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } });
  assert.match(lastStderr, /user_namespace is auto and the cluster's version is not known/);
  assert.equal(s.containers.length, 1);
  const c = s.containers[0];
  assert.equal(c.name, 'sandbox');
  assert.equal(c.image, 'localhost/vivarium-sandbox:0.1.0-k8s', 'kubernetes.image defaults to the top-level image');
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
  assert.equal(c.securityContext.runAsNonRoot, true);
  assert.equal(bytes(c.resources.limits.memory), 2 * 2 ** 30);
  assert.equal(millicores(c.resources.limits.cpu), 2000);
  assert.ok(c.resources.limits['ephemeral-storage']);
  assert.deepEqual(c.resources.requests, c.resources.limits, 'requests = limits (Guaranteed)');
  const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.mountPath, m.name]));
  const vols = Object.fromEntries(s.volumes.map((v) => [v.name, v]));
  assert.deepEqual(vols[mounts['/workspace']].persistentVolumeClaim, { claimName: 'vivarium-alice-workspace' });
  assert.equal(vols[mounts['/tmp']].emptyDir.medium, 'Memory');
  assert.equal(bytes(vols[mounts['/tmp']].emptyDir.sizeLimit), 256 * 2 ** 20);
  assert.deepEqual(c.ports.map((p) => p.containerPort), [8700]);
  assert.equal(c.readinessProbe.httpGet.path, '/health');
  assert.ok([8700, 'agent'].includes(c.readinessProbe.httpGet.port));

  // Env: the agent on 0.0.0.0:agent_port, no socket, a random secret,
  // the proxy by address, the link env.
  const env = envOf(pod);
  assert.equal(env.VIVARIUM_HOST, '0.0.0.0');
  assert.equal(env.VIVARIUM_PORT, '8700');
  assert.equal(env.VIVARIUM_SOCKET, undefined, 'no unix socket in a Pod');
  assert.match(env.VIVARIUM_AGENT_SECRET, SECRET, '32 random bytes in hex');
  assert.equal(env.HTTPS_PROXY, 'http://127.0.0.1:3128');
  assert.equal(env.https_proxy, 'http://127.0.0.1:3128');
  assert.equal(env.VIVARIUM_LINK_USER, 'alice');
  assert.match(env.VIVARIUM_LINK_KEY, /^[0-9a-f]{64}$/);
  assert.notEqual(env.VIVARIUM_LINK_KEY, env.VIVARIUM_AGENT_SECRET, 'the link key the sandbox holds is not its agent secret');
  assert.equal(pod.spec.containers[0].env.filter((e) => e.name === 'VIVARIUM_AGENT_SECRET').length, 1);
});

test('every kubernetes: key lands where the contract puts it', () => {
  const docs = render('bob-2', `kubernetes:
  namespace: team-a
  image: registry.example/vivarium-sandbox:1.2
  runtime_class: gvisor
  storage_class: fast-ssd
  agent_port: 9100
  uid_base: 200000
  user_namespace: false
  egress_proxy: 127.0.0.1:3130
  egress_selector: app=proxy,tier=edge
  supervisor_selector: app=sup
limits:
  memory: 512m
  cpus: 0.5
  workspace: 1g
sandbox:
  tmp_size: 64m
  env:
    FOO: bar`);
  for (const d of docs) assert.deepEqual(validate(d), [], `${d.kind} is valid`);
  const [pvc, np, pod] = docs;
  assert.equal(pvc.spec.storageClassName, 'fast-ssd');
  assert.equal(bytes(pvc.spec.resources.requests.storage), 2 ** 30);
  assert.deepEqual(np.spec.ingress[0].from[0].podSelector.matchLabels, { app: 'sup' });
  assert.deepEqual(np.spec.ingress[0].ports, [{ protocol: 'TCP', port: 9100 }]);
  assert.deepEqual(np.spec.egress[0].to[0].podSelector.matchLabels, { app: 'proxy', tier: 'edge' });
  assert.deepEqual(np.spec.egress[0].ports, [{ protocol: 'TCP', port: 3130 }]);
  assert.equal(pod.spec.runtimeClassName, 'gvisor');
  assert.equal(pod.spec.securityContext.runAsUser, 200000);
  const c = pod.spec.containers[0];
  assert.equal(c.image, 'registry.example/vivarium-sandbox:1.2');
  assert.equal(bytes(c.resources.limits.memory), 512 * 2 ** 20);
  assert.equal(millicores(c.resources.limits.cpu), 500);
  assert.deepEqual(c.ports.map((p) => p.containerPort), [9100]);
  const env = envOf(pod);
  assert.equal(env.VIVARIUM_PORT, '9100');
  assert.equal(env.FOO, 'bar', 'sandbox.env');
  assert.equal(env.HTTPS_PROXY, 'http://127.0.0.1:3130');
  assert.match(env.VIVARIUM_AGENT_SECRET, SECRET);
  const tmp = pod.spec.volumes.find((v) => v.emptyDir);
  assert.equal(bytes(tmp.emptyDir.sizeLimit), 64 * 2 ** 20);
});

test('user_namespace false: no hostUsers, the user\'s own uid on the node; true: hostUsers false', () => {
  let [pvc, , pod] = render('gus', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128\n  user_namespace: false');
  assert.deepEqual(validate(pod), []);
  const uid = Number(pvc.metadata.annotations['vivarium.io/uid']);
  assert.equal(pod.spec.hostUsers, undefined);
  assert.equal(pod.spec.securityContext.runAsUser, uid);
  assert.equal(pod.spec.securityContext.fsGroup, uid);
  assert.doesNotMatch(lastStderr, /user_namespace/);
  [, , pod] = render('gus', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128\n  user_namespace: true\n  uid_base: 200000');
  assert.deepEqual(validate(pod), []);
  assert.equal(pod.spec.hostUsers, false);
  assert.equal(pod.spec.securityContext.runAsUser, 1000);
  assert.doesNotMatch(lastStderr, /user_namespace/);
  const r = render('gus', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128\n  user_namespace: maybe', { expectFail: true });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /user_namespace.*auto, true or false/);
});

test('sandbox.env cannot undo the agent\'s own variables', () => {
  const [, , pod] = render('carol', `kubernetes:
  egress_proxy: 127.0.0.1:3128
sandbox:
  env:
    VIVARIUM_HOST: 10.0.0.1
    VIVARIUM_AGENT_SECRET: ${'z'.repeat(40)}`);
  const names = pod.spec.containers[0].env.map((e) => e.name);
  assert.equal(names.filter((n) => n === 'VIVARIUM_HOST').length, 1, 'one VIVARIUM_HOST');
  assert.equal(names.filter((n) => n === 'VIVARIUM_AGENT_SECRET').length, 1, 'one VIVARIUM_AGENT_SECRET');
  const env = envOf(pod);
  assert.equal(env.VIVARIUM_HOST, '0.0.0.0');
  assert.match(env.VIVARIUM_AGENT_SECRET, SECRET);
  assert.notEqual(env.VIVARIUM_AGENT_SECRET, 'z'.repeat(40));
});

test('every Pod gets a secret of its own, the same user\'s next one too; a bad user id is refused', () => {
  const a = envOf(render('dora', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128')[2]).VIVARIUM_AGENT_SECRET;
  const b = envOf(render('erin', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128')[2]).VIVARIUM_AGENT_SECRET;
  const a2 = envOf(render('dora', 'kubernetes:\n  egress_proxy: 127.0.0.1:3128')[2]).VIVARIUM_AGENT_SECRET;
  assert.notEqual(a, b);
  assert.notEqual(a, a2, 'not derived from the user');
  for (const u of ['Bad_User', 'x'.repeat(64), '../etc']) {
    const r = render(u, 'kubernetes:\n  egress_proxy: 127.0.0.1:3128', { expectFail: true });
    assert.notEqual(r.status, 0, `user ${u} accepted`);
    assert.equal(r.stdout, '', 'nothing printed for a refused user');
  }
});

test('the proxy is given by address: a name is resolved by the supervisor, one that does not resolve is kept as it is', () => {
  let env = envOf(render('fay', 'kubernetes:\n  egress_proxy: localhost:3128')[2]);
  assert.match(env.HTTPS_PROXY, /^http:\/\/(127\.0\.0\.1|\[::1\]):3128$/, env.HTTPS_PROXY);
  env = envOf(render('fay', 'kubernetes:\n  egress_proxy: no-such-host.invalid:3128')[2]);
  assert.equal(env.HTTPS_PROXY, 'http://no-such-host.invalid:3128');
});
