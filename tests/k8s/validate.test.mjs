// validate.test.mjs: the validator accepts the objects the contract
// describes and refuses each way one can be wrong, so a test that runs
// objects through it can fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate, assertValid, podSecurityErrors, parseDocuments } from './validate.mjs';
import * as f from './fixtures/objects.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const clone = (o) => structuredClone(o);
// Sets (or deletes, for undefined) the field at a dotted path.
function set(o, path, v) {
  const ks = path.split('.');
  let x = o;
  for (const k of ks.slice(0, -1)) x = x[k];
  if (v === undefined) delete x[ks.at(-1)]; else x[ks.at(-1)] = v;
  return o;
}
const refused = (o, re, msg) => {
  const errs = validate(o);
  assert.ok(errs.length > 0, `${msg}: accepted`);
  if (re) assert.ok(errs.some((e) => re.test(e)), `${msg}: refused, but not for ${re}:\n${errs.join('\n')}`);
};

test('the contract\'s Pod, PVC and NetworkPolicy are valid', () => {
  for (const o of [f.pod('alice'), f.pod('bob-2', { runtimeClass: 'gvisor' }), f.pvc('alice'),
    f.pvc('alice', { storageClass: 'standard' }), f.networkPolicy('alice')])
    assert.deepEqual(validate(o), [], `${o.kind}`);
  assert.doesNotThrow(() => assertValid(f.pod('alice')));
});

test('workloads, services and RBAC of a deployment are valid (no false unknown fields)', () => {
  const dep = {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: 'vivarium-supervisor', labels: { 'app.kubernetes.io/name': 'vivarium-supervisor' } },
    spec: {
      replicas: 1, strategy: { type: 'Recreate' },
      selector: { matchLabels: { 'app.kubernetes.io/name': 'vivarium-supervisor' } },
      template: {
        metadata: { labels: { 'app.kubernetes.io/name': 'vivarium-supervisor' }, annotations: { 'x.io/y': 'z' } },
        spec: {
          serviceAccountName: 'vivarium-supervisor',
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [{
            name: 'supervisor', image: 'vivarium-supervisor:0.1.0', args: ['-f', '/etc/vivarium/supervisor.yaml'],
            ports: [{ name: 'http', containerPort: 8080 }],
            livenessProbe: { httpGet: { path: '/health', port: 'http' } },
            env: [{ name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, readOnlyRootFilesystem: true },
            volumeMounts: [{ name: 'conf', mountPath: '/etc/vivarium', readOnly: true }, { name: 'key', mountPath: '/run/key' }],
          }],
          volumes: [{ name: 'conf', configMap: { name: 'vivarium' } }, { name: 'key', secret: { secretName: 'vivarium-key' } }],
        },
      },
    },
  };
  const objs = [dep,
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'vivarium-egress' },
      spec: { selector: { 'app.kubernetes.io/name': 'vivarium-egress' }, ports: [{ port: 3128, targetPort: 3128, protocol: 'TCP' }] } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vivarium-supervisor' }, automountServiceAccountToken: true },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'vivarium-supervisor' },
      rules: [{ apiGroups: [''], resources: ['pods', 'persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'create', 'delete'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'vivarium-supervisor' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'vivarium-supervisor' },
      subjects: [{ kind: 'ServiceAccount', name: 'vivarium-supervisor' }] },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'vivarium' }, data: { 'supervisor.yaml': 'backend: kubernetes\n' } },
  ];
  for (const o of objs) assert.deepEqual(validate(o), [], `${o.kind}`);
  // And the same Deployment with a restricted field missing in its template is refused.
  refused(set(clone(dep), 'spec.template.spec.containers.0.securityContext.allowPrivilegeEscalation', undefined),
    /privilege escalation/, 'Deployment template without allowPrivilegeEscalation');
  refused(set(clone(dep), 'spec.selector.matchLabels', { 'app.kubernetes.io/name': 'other' }), /does not match/, 'selector');
});

// Each restricted control, broken one at a time in the contract's Pod.
const restricted = [
  ['spec.containers.0.securityContext.allowPrivilegeEscalation', undefined, /privilege escalation/],
  ['spec.containers.0.securityContext.allowPrivilegeEscalation', true, /privilege escalation/],
  ['spec.containers.0.securityContext.capabilities', undefined, /capabilities\/drop: restricted capabilities: must include ALL/],
  ['spec.containers.0.securityContext.capabilities.drop', ['NET_RAW'], /must include ALL/],
  ['spec.containers.0.securityContext.capabilities.add', ['SYS_ADMIN'], /SYS_ADMIN/],
  ['spec.containers.0.securityContext.capabilities.add', ['CHOWN'], /only NET_BIND_SERVICE/],
  ['spec.containers.0.securityContext.runAsNonRoot', false, /non-root/],
  ['spec.containers.0.securityContext.runAsUser', 0, /non-root user/],
  ['spec.securityContext.runAsUser', 0, /non-root user/],
  ['spec.securityContext.seccompProfile', undefined, /seccomp/],
  ['spec.securityContext.seccompProfile.type', 'Unconfined', /seccomp/],
  ['spec.containers.0.securityContext.seccompProfile', { type: 'Unconfined' }, /seccomp/],
  ['spec.containers.0.securityContext.privileged', true, /privileged/],
  ['spec.hostNetwork', true, /host namespaces/],
  ['spec.hostPID', true, /host namespaces/],
  ['spec.hostIPC', true, /host namespaces/],
  ['spec.containers.0.ports.0.hostPort', 8700, /host ports/],
  ['spec.containers.0.securityContext.procMount', 'Unmasked', /proc mount/],
  ['spec.securityContext.seLinuxOptions', { type: 'spc_t' }, /SELinux/],
  ['spec.securityContext.sysctls', [{ name: 'kernel.msgmax', value: '1' }], /sysctl/],
  ['spec.containers.0.securityContext.appArmorProfile', { type: 'Unconfined' }, /AppArmor/],
  ['spec.volumes.1', { name: 'tmp', hostPath: { path: '/tmp' } }, /hostPath/],
  ['spec.volumes.1', { name: 'tmp', nfs: { server: 'x', path: '/' } }, /volume type nfs/],
];
for (const [path, v, re] of restricted) {
  test(`restricted: a Pod with ${path} = ${JSON.stringify(v)} is refused`, () => {
    const p = set(f.pod('alice'), path, v);
    refused(p, re, path);
    assert.ok(podSecurityErrors(p).length > 0, 'podSecurityErrors alone refuses it too');
  });
}

test('restricted: runAsNonRoot missing at both levels is refused, at the pod level alone is enough', () => {
  const p = f.pod('alice');
  delete p.spec.containers[0].securityContext.runAsNonRoot;
  assert.deepEqual(validate(p), []);
  delete p.spec.securityContext.runAsNonRoot;
  refused(p, /running as non-root/, 'no runAsNonRoot');
});

test('restricted: an init container is held to the same rules', () => {
  const p = f.pod('alice');
  p.spec.initContainers = [{ name: 'init', image: 'x', securityContext: { capabilities: { drop: ['ALL'] } } }];
  refused(p, /initContainers\/0\/securityContext\/allowPrivilegeEscalation/, 'init container');
});

// Schema and API-server checks: wrong types, missing required fields,
// unknown fields, invalid names.
const broken = [
  ['Pod', 'spec.containers.0.ports.0.containerPort', '8700', /containerPort: must be integer/],
  ['Pod', 'spec.containers.0.ports.0.containerPort', 70000, /not in 1..65535/],
  ['Pod', 'spec.automountServiceAccountToken', 'false', /automountServiceAccountToken: must be boolean/],
  ['Pod', 'spec.securityContext.runAsUser', '100000', /runAsUser: must be integer/],
  ['Pod', 'spec.containers.0.resources.limits.memory', '1Gx', /quantity/],
  ['Pod', 'spec.containers.0.resources.requests.memory', '2Gi', /exceeds the limit/],
  ['Pod', 'spec.containers.0.env.0.value', 0, /env\/0\/value: must be string/],
  ['Pod', 'spec.containers.0.env.0.name', 'VIVARIUM HOST', /not a valid variable name/],
  ['Pod', 'spec.containers.0.image', undefined, /image: required/],
  ['Pod', 'spec.containers', undefined, /required property.*containers/],
  ['Pod', 'spec.containers.0.volumeMounts.0.name', 'wrkspace', /no volume "wrkspace"/],
  ['Pod', 'spec.volumes.0.persistentVolumeClaim.claimName', undefined, /claimName/],
  ['Pod', 'spec.volumes.1.emptyDir.medium', 3, /medium: must be string/],
  ['Pod', 'spec.restartPolicy', 'Sometimes', /restartPolicy/],
  ['Pod', 'spec.securityContxt', {}, /securityContxt: unknown field/],
  ['Pod', 'spec.containers.0.securityContext.readOnlyRootFileSystem', true, /readOnlyRootFileSystem: unknown field/],
  ['Pod', 'metadata.name', 'vivarium-Alice', /DNS-1123/],
  ['Pod', 'metadata.name', undefined, /metadata\/name: required/],
  ['Pod', 'metadata.labels.vivarium\\.io/user', 'x'.repeat(64), /not a valid label value/],
  ['Pod', 'apiVersion', 'v2', /no schema for v2 Pod/],
  ['Pod', 'spec.containers.0.readinessProbe.httpGet.port', 'agnt', /no container port named agnt/],
  ['PersistentVolumeClaim', 'spec.accessModes', undefined, /accessModes/],
  ['PersistentVolumeClaim', 'spec.accessModes', ['ReadWriteSometimes'], /accessModes/],
  ['PersistentVolumeClaim', 'spec.resources.requests.storage', undefined, /storage: required/],
  ['PersistentVolumeClaim', 'spec.resources.requests.storage', 'lots', /quantity/],
  ['PersistentVolumeClaim', 'metadata.annotations.vivarium\\.io/uid', 3, /must be string/],
  ['NetworkPolicy', 'spec.podSelector', undefined, /podSelector/],
  ['NetworkPolicy', 'spec.policyTypes', ['Ingress', 'Sideways'], /Sideways/],
  ['NetworkPolicy', 'spec.ingress.0.ports.0.port', 0, /port: 0/],
  ['NetworkPolicy', 'spec.egress.0.to.0.podSelector.matchLabels', { 'app.kubernetes.io/name': 3128 }, /must be string/],
  ['NetworkPolicy', 'spec.egress.0.too', [], /too: unknown field/],
];
const make = { Pod: () => f.pod('alice'), PersistentVolumeClaim: () => f.pvc('alice'), NetworkPolicy: () => f.networkPolicy('alice') };
for (const [kind, path, v, re] of broken) {
  test(`schema: a ${kind} with ${path} = ${JSON.stringify(v)} is refused`, () => {
    // Dotted paths; "\\." escapes a dot inside a key.
    const o = make[kind]();
    const ks = path.split(/(?<!\\)\./).map((k) => k.replace(/\\\./g, '.'));
    let x = o;
    for (const k of ks.slice(0, -1)) x = x[k];
    if (v === undefined) delete x[ks.at(-1)]; else x[ks.at(-1)] = v;
    refused(o, re, path);
  });
}

test('not objects, unknown kinds and missing kinds are refused', () => {
  refused(null, /not an object/, 'null');
  refused([], /not an object/, 'array');
  refused({ apiVersion: 'v1', metadata: { name: 'x' } }, /kind/, 'no kind');
  refused({ apiVersion: 'v1', kind: 'Gadget', metadata: { name: 'x' } }, /no schema/, 'unknown kind');
  refused({ apiVersion: 'apps/v1', kind: 'Pod', metadata: { name: 'x' } }, /no schema/, 'kind in the wrong group');
});

test('podSecurity: false checks the schema only', () => {
  const p = set(f.pod('alice'), 'spec.hostNetwork', true);
  assert.deepEqual(validate(p, { podSecurity: false }), []);
  assert.throws(() => assertValid(p), /host namespaces/);
});

test('YAML multi-document and JSON parsing', () => {
  const docs = parseDocuments(`---\n${JSON.stringify(f.pvc('a'))}\n---\nkind: NetworkPolicy\napiVersion: networking.k8s.io/v1\nmetadata: {name: x}\nspec: {podSelector: {}}\n---\n`);
  assert.equal(docs.length, 2);
  assert.equal(docs[1].kind, 'NetworkPolicy');
  assert.equal(parseDocuments(JSON.stringify({ kind: 'List', apiVersion: 'v1', items: [f.pod('a'), f.pvc('a')] })).length, 2);
  assert.throws(() => parseDocuments('a: [1,\n'), /./);
});

test('the CLI: exit 0 for valid files, 1 and the reasons for an invalid one', () => {
  const dir = mkdtempSync('/tmp/vk8s-validate-');
  try {
    const good = join(dir, 'good.yaml'), bad = join(dir, 'bad.yaml'), json = join(dir, 'pod.json');
    writeFileSync(good, [f.pvc('a'), f.networkPolicy('a'), f.pod('a')].map((o) => JSON.stringify(o, null, 1)).join('\n---\n'));
    writeFileSync(json, JSON.stringify(f.pod('b')));
    const badPod = f.pod('c');
    delete badPod.spec.containers[0].securityContext.capabilities;
    writeFileSync(bad, `---\n${JSON.stringify(f.pvc('c'))}\n---\n${JSON.stringify(badPod)}\n`);
    const cli = join(here, 'validate.mjs');
    const out = execFileSync('node', [cli, good, json], { encoding: 'utf8' });
    assert.match(out, /4 valid, 0 invalid/);
    const r = spawnSync('node', [cli, good, bad], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /FAIL .*bad\.yaml\[1\] Pod vivarium-c/);
    assert.match(r.stdout, /capabilities\/drop: restricted capabilities/);
    assert.match(r.stdout, /ok +.*bad\.yaml\[0\] PersistentVolumeClaim/);
    const none = spawnSync('node', [cli], { encoding: 'utf8' });
    assert.equal(none.status, 2);
    const missing = spawnSync('node', [cli, join(dir, 'nope.yaml')], { encoding: 'utf8' });
    assert.equal(missing.status, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
