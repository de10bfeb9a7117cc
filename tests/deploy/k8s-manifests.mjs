// tests/deploy/k8s-manifests.mjs (make test-deploy-k8s): the plain
// manifests in deploy/kubernetes/ against what they must fit.
//
//   1. Every object, secrets.yaml.example included, through
//      tests/k8s/validate.mjs: the Kubernetes OpenAPI schemas, unknown
//      fields, and the restricted Pod Security Standard for the pod
//      templates (the namespace enforces it).
//   2. The ConfigMaps' files through the programs that read them:
//      `vivarium-supervisor -n` (with the environment the Deployment gives
//      it) and `vivarium-egress -n`; the Secret placeholders are refused.
//   3. The Role against the REST calls of the Kubernetes backend
//      (docs/supervisor.md lists them): every call allowed, no verb more;
//      and against what the real supervisor asked tests/k8s's fake API
//      server in a session (first call, idle stop, the next call, a
//      restart that adopts, one with another supervisor_selector that
//      updates the policy, vivariumctl status and remove-user --purge):
//      every request granted, every grant asked for.
//   4. Names, labels, selectors and ports across the files, and against
//      the backend: the objects `vivariumctl render --kubernetes` prints
//      for a user with the ConfigMap's configuration are admitted by the
//      manifests' NetworkPolicies and admit the manifests' Pods.
//   5. Every image is localhost/vivarium-sandbox:<the Makefile's VERSION>.
//
// Then the same checks on broken copies (mutants): each must fail, so a
// check that can no longer fail is itself a failure.
//
//   BIN=bin node tests/deploy/k8s-manifests.mjs [DIR]    (DIR: deploy/kubernetes)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync,
  writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { validate } from '../k8s/validate.mjs';

// tests/k8s/ has the YAML parser its validator uses; parse with the same.
const YAML = createRequire(new URL('../k8s/package.json', import.meta.url))('yaml');

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const BIN = resolve(ROOT, process.env.BIN || 'bin');
const DIR = resolve(ROOT, process.argv[2] || 'deploy/kubernetes');
const TMP = mkdtempSync(join(tmpdir(), 'vk8sman.'));
process.on('exit', () => rmSync(TMP, { recursive: true, force: true }));

// The Makefile's own VERSION line, not an override for a test image tag.
const VERSION = readFileSync(join(ROOT, 'Makefile'), 'utf8')
  .match(/^VERSION\s*:=\s*(\S+)/m)[1];
const IMAGE = `localhost/vivarium-sandbox:${VERSION}`;

// The sandbox objects' labels (docs/supervisor.md, supervisor/kube.h) and
// the selector defaults of the kubernetes: section (supervisor/conf.c).
const SANDBOX_LABELS = {
  'app.kubernetes.io/managed-by': 'vivarium',
  'app.kubernetes.io/name': 'vivarium-sandbox',
};
const DEFAULTS = {
  agent_port: 8700,
  egress_proxy: 'vivarium-egress:3128',
  egress_selector: 'app.kubernetes.io/name=vivarium-egress',
  supervisor_selector: 'app.kubernetes.io/name=vivarium-supervisor',
};

// Every REST call the backend makes (the contract; docs/supervisor.md,
// "Kubernetes backend"), NS and NAME standing for the namespace and an
// object's name.
const CALLS = [
  ['GET', '/version'],
  ['GET', '/api/v1/namespaces/NS/pods?labelSelector=SEL'],
  ['GET', '/api/v1/namespaces/NS/pods?watch=1&fieldSelector=metadata.name%3DNAME&resourceVersion=1&timeoutSeconds=30'],
  ['GET', '/api/v1/namespaces/NS/pods/NAME'],
  ['POST', '/api/v1/namespaces/NS/pods'],
  ['DELETE', '/api/v1/namespaces/NS/pods/NAME'],
  ['GET', '/api/v1/namespaces/NS/persistentvolumeclaims?labelSelector=SEL'],
  ['GET', '/api/v1/namespaces/NS/persistentvolumeclaims/NAME'],
  ['POST', '/api/v1/namespaces/NS/persistentvolumeclaims'],
  ['DELETE', '/api/v1/namespaces/NS/persistentvolumeclaims/NAME'],
  ['GET', '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies?labelSelector=SEL'],
  ['GET', '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies/NAME'],
  ['POST', '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies'],
  ['PUT', '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies/NAME'],
  ['DELETE', '/apis/networking.k8s.io/v1/namespaces/NS/networkpolicies/NAME'],
];

// ---------------------------------------------------------------- helpers

let passed = 0, failed = 0;
function ok(name) { passed++; console.log(`ok   ${name}`); }
function fail(name, detail) {
  failed++;
  console.log(`FAIL ${name}`);
  if (detail) for (const l of String(detail).split('\n').slice(0, 40)) console.log(`     ${l}`);
}

// The manifests: { file: [docs] } for every *.yaml and *.yaml.example.
function load(dir, texts = {}) {
  const files = {};
  for (const f of readdirSync(dir).sort()) {
    if (!/\.ya?ml(\.example)?$/.test(f)) continue;
    const text = readFileSync(join(dir, f), 'utf8');
    texts[f] = [text];
    const docs = YAML.parseAllDocuments(text);
    files[f] = docs.map((d) => {
      if (d.errors.length) throw new Error(`${f}: ${d.errors[0].message}`);
      return d.toJS();
    }).filter((o) => o != null);
  }
  return files;
}

const all = (m) => Object.values(m.files).flat();
const find = (m, kind, name) => all(m).find((o) => o.kind === kind && o.metadata?.name === name);
const need = (m, kind, name) => {
  const o = find(m, kind, name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
};

// "k=v,k2=v2" as an object.
function selector(s) {
  return Object.fromEntries(s.split(',').map((kv) => kv.split('=')));
}
// Does a matchLabels selector select these labels?
function selects(match, labels) {
  return Object.entries(match || {}).every(([k, v]) => labels?.[k] === v);
}
// Does a peer's podSelector (in this namespace) select sandboxes and only
// sandboxes: both of their labels, whatever else it narrows by?
function onlySandboxes(peer) {
  return Boolean(peer.podSelector && !peer.namespaceSelector && !peer.ipBlock
    && selects(SANDBOX_LABELS, peer.podSelector.matchLabels || {}));
}
// A container's port number for a name or number.
function portOf(container, p) {
  if (typeof p === 'number') return p;
  const q = (container.ports || []).find((x) => x.name === p);
  return q ? q.containerPort : undefined;
}

// The RBAC request a REST call is: { group, resource, verb } or
// { nonResource, verb } (the authorizer's mapping of method and path).
function rbacOf(method, url) {
  const [path, query = ''] = url.split('?');
  const q = new URLSearchParams(query);
  let m = path.match(/^\/api\/v1\/namespaces\/[^/]+\/([^/]+)(?:\/([^/]+))?$/);
  let group = '';
  if (!m) {
    m = path.match(/^\/apis\/([^/]+)\/[^/]+\/namespaces\/[^/]+\/([^/]+)(?:\/([^/]+))?$/);
    if (!m) return { nonResource: path, verb: method.toLowerCase() };
    group = m[1];
    m = [m[0], m[2], m[3]];
  }
  const [, resource, name] = m;
  const watch = ['1', 'true'].includes(q.get('watch'));
  const verb = { GET: name ? 'get' : watch ? 'watch' : 'list', POST: 'create',
    PUT: 'update', PATCH: 'patch', DELETE: name ? 'delete' : 'deletecollection' }[method];
  return { group, resource, verb };
}

// The Role's rules as a set of "group/resource:verb".
function grants(role) {
  const out = new Set();
  for (const r of role.rules || [])
    for (const g of r.apiGroups || [])
      for (const res of r.resources || [])
        for (const v of r.verbs || []) out.add(`${g}/${res}:${v}`);
  return out;
}

function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  return { code: r.status, out: (r.stdout || '') + (r.stderr || '') + (r.error ? String(r.error) : '') };
}

// The same without blocking this process (the fake API server runs in it).
function runAsync(cmd, args) {
  return new Promise((res) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('error', (e) => res({ code: null, out: String(e) }));
    p.on('close', (code) => res({ code, out }));
  });
}

// A YAML multi-document stream of JSON objects, as render prints it.
function parseStream(text) {
  return YAML.parseAllDocuments(text).map((d) => d.toJS()).filter((o) => o != null);
}

// ---------------------------------------------------------------- checks
// Each takes the model { files } and returns a list of problems.

const checks = {};

checks['every object is valid and restricted'] = (m) => {
  const errs = [];
  for (const [f, docs] of Object.entries(m.files))
    docs.forEach((o, i) => {
      for (const e of validate(o)) errs.push(`${f}[${i}] ${o.kind} ${o.metadata?.name}: ${e}`);
    });
  return errs;
};

checks['node tests/k8s/validate.mjs passes every file'] = (m) => {
  if (m.dir === undefined) return [];	// a mutant: the check above sees it
  const r = run(process.execPath, [join(ROOT, 'tests/k8s/validate.mjs'),
    ...Object.keys(m.files).map((f) => join(m.dir, f))]);
  return r.code === 0 ? [] : [r.out.split('\n').filter((l) => !/^ok /.test(l)).join('\n')];
};

// An integer written with a leading zero (a file mode, 0440) is octal to
// kubectl's YAML 1.1 and decimal to YAML 1.2 tools, this test's parser
// included: say modes in decimal.
checks['no integer is written in octal'] = (m) => {
  const errs = [];
  for (const [f, [text]] of Object.entries(m.texts))
    for (const [i, line] of text.split('\n').entries())
      if (/^[^#]*:\s+[-+]?0[0-7]+\s*(#.*)?$/.test(line)) errs.push(`${f}:${i + 1}: ${line.trim()}`);
  return errs;
};

checks['the namespace enforces, audits and warns at restricted'] = (m) => {
  const ns = all(m).filter((o) => o.kind === 'Namespace');
  if (ns.length !== 1) return [`expected one Namespace, found ${ns.length}`];
  const errs = [];
  for (const mode of ['enforce', 'audit', 'warn'])
    if (ns[0].metadata.labels?.[`pod-security.kubernetes.io/${mode}`] !== 'restricted')
      errs.push(`pod-security.kubernetes.io/${mode} is not restricted`);
  const kns = supervisorConf(m).kube.namespace;
  if (kns !== undefined && kns !== ns[0].metadata.name)
    errs.push(`the supervisor makes sandboxes in ${kns}, not ${ns[0].metadata.name}`);
  for (const o of all(m))
    if (o.kind !== 'Namespace' && o.metadata.namespace !== ns[0].metadata.name)
      errs.push(`${o.kind} ${o.metadata.name} is in namespace ${o.metadata.namespace}, not ${ns[0].metadata.name}`);
  return errs;
};

// The supervisor's configuration as the ConfigMap has it, and its
// kubernetes: section with the defaults filled in.
function supervisorConf(m) {
  const text = need(m, 'ConfigMap', 'vivarium-supervisor').data['supervisor.yaml'];
  const conf = YAML.parse(text);
  return { text, conf, kube: { ...DEFAULTS, ...(conf.kubernetes || {}) } };
}

// The supervisor's Deployment's env, with a stand-in for each value that
// comes from a Secret (what the Pod would see).
function supervisorEnv(m, token = '0123456789abcdef0123456789abcdef') {
  const c = need(m, 'Deployment', 'vivarium-supervisor').spec.template.spec.containers[0];
  const env = {};
  for (const e of c.env || [])
    env[e.name] = e.valueFrom?.secretKeyRef ? token : e.value;
  return env;
}

checks['vivarium-supervisor -n accepts the ConfigMap as the Pod runs it'] = (m) => {
  const { text } = supervisorConf(m);
  const f = join(TMP, 'supervisor.yaml');
  writeFileSync(f, text);
  const env = supervisorEnv(m);
  if (!env.VIVARIUM_SUPERVISOR_TOKEN && !/^token(_file)?:/m.test(text))
    return ['neither the Deployment nor the config gives the token'];
  const r = run(join(BIN, 'vivarium-supervisor'), ['-n', '-f', f], env);
  return r.code === 0 && /configuration OK/.test(r.out) ? [] : [`exit ${r.code}: ${r.out}`];
};

// The proxy does not start without its host_addresses file: the
// ConfigMap vivarium-egress-hosts, mounted where egress.yaml names it.
checks['vivarium-egress -n accepts its ConfigMap'] = (m) => {
  const text = need(m, 'ConfigMap', 'vivarium-egress').data['egress.yaml'];
  const f = join(TMP, 'egress.yaml');
  writeFileSync(f, text);
  const hf = YAML.parse(text).host_addresses;
  const ps = need(m, 'Deployment', 'vivarium-egress').spec.template.spec;
  const vol = (ps.volumes || []).find((v) => v.configMap?.name === 'vivarium-egress-hosts');
  const mnt = vol && ps.containers[0].volumeMounts.find((x) => x.name === vol.name);
  if (!mnt || mnt.subPath || `${mnt.mountPath}/host-addresses` !== hf)
    return [`host_addresses ${hf} is not the ConfigMap vivarium-egress-hosts mounted (whole, no subPath)`];
  const h = join(TMP, 'host-addresses');
  writeFileSync(h, need(m, 'ConfigMap', 'vivarium-egress-hosts').data['host-addresses'] || '');
  const r = run(join(BIN, 'vivarium-egress'), ['-n', '-f', f], { VIVARIUM_EGRESS_HOST_ADDRESSES: h });
  return r.code === 0 && /configuration OK/.test(r.out) ? [] : [`exit ${r.code}: ${r.out}`];
};

checks['the Secret placeholders are refused by the supervisor'] = (m) => {
  const errs = [];
  const { text } = supervisorConf(m);
  const f = join(TMP, 'supervisor.yaml');
  writeFileSync(f, text);
  const tok = need(m, 'Secret', 'vivarium-token').stringData?.token;
  const r = run(join(BIN, 'vivarium-supervisor'), ['-n', '-f', f], { VIVARIUM_SUPERVISOR_TOKEN: tok });
  if (r.code === 0) errs.push(`the token placeholder "${tok}" is accepted`);
  const key = need(m, 'Secret', 'vivarium-link-key').stringData?.['link.key'];
  if (/^[0-9a-fA-F]{64}\s*$/.test(key || '')) errs.push('the link key placeholder is a usable key');
  return errs;
};

checks['the Role allows exactly the backend\'s calls'] = (m) => {
  const errs = [];
  const role = need(m, 'Role', 'vivarium-supervisor');
  if (all(m).some((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'))
    errs.push('something cluster-wide is granted');
  const have = grants(role);
  const want = new Set();
  for (const [method, url] of CALLS) {
    const r = rbacOf(method, url);
    if (r.nonResource) continue;	// /version: system:public-info-viewer
    want.add(`${r.group}/${r.resource}:${r.verb}`);
  }
  for (const w of want) if (!have.has(w)) errs.push(`missing ${w}`);
  for (const h of have) if (!want.has(h)) errs.push(`not needed: ${h}`);
  for (const r of role.rules || [])
    if (r.resourceNames || r.nonResourceURLs) errs.push('a rule with resourceNames or nonResourceURLs');
  // The binding gives the Role to the service account the Pod runs as.
  const rb = need(m, 'RoleBinding', 'vivarium-supervisor');
  const sa = need(m, 'Deployment', 'vivarium-supervisor').spec.template.spec.serviceAccountName;
  if (rb.roleRef.kind !== 'Role' || rb.roleRef.name !== role.metadata.name)
    errs.push(`the RoleBinding refers to ${rb.roleRef.kind} ${rb.roleRef.name}`);
  if (!(rb.subjects || []).some((s) => s.kind === 'ServiceAccount' && s.name === sa
      && s.namespace === role.metadata.namespace))
    errs.push(`the RoleBinding does not name the Pod's service account ${sa}`);
  if (!find(m, 'ServiceAccount', sa)) errs.push(`no ServiceAccount ${sa}`);
  return errs;
};

// The requests of the session (below), as the authorizer sees them.
let session = null;
checks['the Role grants exactly what a real session asks'] = (m) => {
  if (!session) return ['no session was recorded'];
  const have = grants(need(m, 'Role', 'vivarium-supervisor'));
  const errs = session.notes.slice();
  for (const g of have) if (!session.used.has(g)) errs.push(`granted, never asked for: ${g}`);
  for (const key of new Set(session.requests)) {
    const [method, url] = key.split(' ');
    const r = rbacOf(method, url);
    if (r.nonResource) {
      if (r.nonResource !== '/version' || r.verb !== 'get') errs.push(`${key}: a non-resource URL`);
      continue;
    }
    if (!have.has(`${r.group}/${r.resource}:${r.verb}`))
      errs.push(`${key}: a cluster answers 403 (needs ${r.verb} on ${r.resource})`);
  }
  return errs;
};

// The supervisor of this checkout on the fake cluster of tests/k8s: one
// user's first call, idle stop (the Pod deleted), the next call, a restart
// that adopts, and vivariumctl's status and remove-user --purge.  Returns
// { requests: ["METHOD /path?query", ...], notes: [...] }.
async function recordSession() {
  const { startStack } = await import('../k8s/stack.mjs');
  const { runPython, until } = await import('../k8s/lib.mjs');
  const s = await startStack({ extra: 'idle_stop_after: 2s' });
  const notes = [];
  try {
    let c = await s.sv.client('rbac');
    await runPython(c, 'x = 1');
    await c.close();
    await until(() => s.api.pod('vivarium-rbac') === null, { ms: 30000, what: 'the idle Pod deleted' });
    c = await s.sv.client('rbac');
    await runPython(c, 'print(x)');
    await c.close();
    await s.restart();
    c = await s.sv.client('rbac');
    await runPython(c, 'print(1)');
    await c.close();
    // Another supervisor_selector: the user's policy is updated in place.
    await s.restart({ kube: 'supervisor_selector: app.kubernetes.io/name=vivarium-supervisor,tier=front' });
    c = await s.sv.client('rbac');
    await runPython(c, 'print(2)');
    await c.close();
    // Not s.ctl: spawnSync would stop this process, and with it the fake
    // API server vivariumctl is talking to.
    for (const args of [['status', 'rbac'], ['remove-user', '--purge', 'rbac']]) {
      const r = await runAsync(join(BIN, 'vivariumctl'), ['-f', s.sv.conf, ...args]);
      if (r.code !== 0) notes.push(`vivariumctl ${args.join(' ')}: exit ${r.code}: ${r.out.trim()}`);
    }
    const requests = s.api.requests.map((r) => {
      const q = new URLSearchParams(r.query).toString();
      return `${r.method} ${r.path}${q ? `?${q}` : ''}`;
    });
    const used = new Set(requests.map((k) => {
      const r = rbacOf(...k.split(' '));
      return r.nonResource ? `nonResource:${r.nonResource}` : `${r.group}/${r.resource}:${r.verb}`;
    }));
    return { requests, notes, used };
  } finally {
    await s.stop();
  }
}

checks['the supervisor is one Pod, replaced by Recreate, restricted'] = (m) => {
  const errs = [];
  const d = need(m, 'Deployment', 'vivarium-supervisor');
  if (d.spec.replicas !== 1) errs.push(`replicas ${d.spec.replicas}`);
  if (d.spec.strategy?.type !== 'Recreate') errs.push(`strategy ${d.spec.strategy?.type}`);
  const c = d.spec.template.spec.containers.find((x) => x.name === 'supervisor');
  if (!c) return ['no container supervisor'];
  const sc = c.securityContext || {};
  if (sc.readOnlyRootFilesystem !== true) errs.push('the root filesystem is writable');
  for (const p of ['readinessProbe', 'livenessProbe'])
    if (c[p]?.httpGet?.path !== '/health') errs.push(`${p} is not GET /health`);
  if (!c.resources?.limits?.memory || !c.resources?.limits?.cpu) errs.push('no memory and cpu limits');
  return errs;
};

checks['ports, labels and selectors agree across the files'] = (m) => {
  const errs = [];
  const { conf, kube } = supervisorConf(m);
  const sup = need(m, 'Deployment', 'vivarium-supervisor');
  const egr = need(m, 'Deployment', 'vivarium-egress');
  const supLabels = sup.spec.template.metadata.labels;
  const egrLabels = egr.spec.template.metadata.labels;
  for (const d of [sup, egr])
    if (!selects(d.spec.selector.matchLabels, d.spec.template.metadata.labels))
      errs.push(`Deployment ${d.metadata.name}: its selector does not select its Pods`);
  // The selectors the sandboxes' policies use find these Pods, and only them.
  if (!selects(selector(kube.supervisor_selector), supLabels))
    errs.push(`supervisor_selector ${kube.supervisor_selector} does not select the supervisor's Pods`);
  if (!selects(selector(kube.egress_selector), egrLabels))
    errs.push(`egress_selector ${kube.egress_selector} does not select the egress proxy's Pods`);
  if (selects(selector(kube.supervisor_selector), egrLabels))
    errs.push('supervisor_selector selects the egress proxy too');
  if (selects(selector(kube.egress_selector), supLabels))
    errs.push('egress_selector selects the supervisor too');
  for (const [k, v] of [['supervisor_selector', supLabels], ['egress_selector', egrLabels]])
    if (selects(SANDBOX_LABELS, v)) errs.push(`the Pods of ${k} carry the sandboxes' labels`);
  // The defaults hold unless the ConfigMap says otherwise: either way the
  // label must be there (an operator who deletes the key gets the default).
  if (!selects(selector(DEFAULTS.supervisor_selector), supLabels))
    errs.push('the supervisor\'s Pods lack the default supervisor_selector label');
  if (!selects(selector(DEFAULTS.egress_selector), egrLabels))
    errs.push('the egress proxy\'s Pods lack the default egress_selector label');

  // The supervisor: listen port = container port = Service target.
  const sc = sup.spec.template.spec.containers[0];
  const listenPort = Number(String(conf.listen).split(':').pop());
  const ssvc = need(m, 'Service', 'vivarium-supervisor');
  if (!selects(ssvc.spec.selector, supLabels) || selects(ssvc.spec.selector, egrLabels))
    errs.push('Service vivarium-supervisor does not select the supervisor alone');
  if (portOf(sc, ssvc.spec.ports[0].targetPort) !== listenPort)
    errs.push(`Service vivarium-supervisor targets ${ssvc.spec.ports[0].targetPort}, the supervisor listens on ${listenPort}`);
  for (const p of ['readinessProbe', 'livenessProbe'])
    if (portOf(sc, sc[p]?.httpGet?.port) !== listenPort) errs.push(`the ${p} is not on ${listenPort}`);

  // The egress proxy: egress_proxy names its Service and port, which
  // reach the port it listens on.
  const [host, port] = [kube.egress_proxy.replace(/:\d+$/, ''), Number(kube.egress_proxy.split(':').pop())];
  const esvc = find(m, 'Service', host.split('.')[0]);
  const ec = egr.spec.template.spec.containers[0];
  const econf = YAML.parse(need(m, 'ConfigMap', 'vivarium-egress').data['egress.yaml']);
  const elisten = [].concat(econf.listen || '0.0.0.0:3128').map((l) => Number(String(l).split(':').pop()));
  if (!esvc) errs.push(`egress_proxy ${kube.egress_proxy}: no Service ${host}`);
  else {
    const sp = esvc.spec.ports.find((p) => p.port === port);
    if (!selects(esvc.spec.selector, egrLabels)) errs.push(`Service ${host} does not select the egress proxy`);
    if (!sp) errs.push(`Service ${host} has no port ${port}`);
    else if (portOf(ec, sp.targetPort) !== port)
      errs.push(`Service ${host} port ${port} targets ${sp.targetPort}: the sandboxes' policies allow ${port} on the proxy Pods`);
    if (!elisten.includes(port)) errs.push(`the proxy listens on ${elisten}, not ${port}`);
  }

  // The manifests' NetworkPolicies and the sandboxes' labels and ports.
  const np = (n) => need(m, 'NetworkPolicy', n);
  const ingressFromSandboxes = (np('vivarium-egress').spec.ingress || []).some((r) =>
    (r.from || []).some(onlySandboxes) && (r.ports || []).some((p) => p.port === port));
  // and nobody else: every peer of every rule is the sandboxes.
  if ((np('vivarium-egress').spec.ingress || []).some((r) => !(r.from || []).length || !r.from.every(onlySandboxes)))
    errs.push('NetworkPolicy vivarium-egress admits more than sandboxes');
  if (!ingressFromSandboxes) errs.push(`NetworkPolicy vivarium-egress does not admit sandboxes on ${port}`);
  if (!selects(np('vivarium-egress').spec.podSelector.matchLabels, egrLabels))
    errs.push('NetworkPolicy vivarium-egress does not select the proxy');
  const toSandboxes = (np('vivarium-supervisor').spec.egress || []).some((r) =>
    (r.to || []).some(onlySandboxes) && (r.ports || []).some((p) => p.port === kube.agent_port));
  if (!toSandboxes) errs.push(`NetworkPolicy vivarium-supervisor does not let the supervisor reach agents on ${kube.agent_port}`);
  if (!selects(np('vivarium-supervisor').spec.podSelector.matchLabels, supLabels))
    errs.push('NetworkPolicy vivarium-supervisor does not select the supervisor');
  const inPorts = (np('vivarium-supervisor').spec.ingress || []).flatMap((r) => (r.ports || []).map((p) => p.port));
  if (!inPorts.includes(listenPort)) errs.push(`NetworkPolicy vivarium-supervisor admits nothing on ${listenPort}`);
  // The proxy's policy lets out the ports the proxy allows, no others.
  const outPorts = new Set((np('vivarium-egress').spec.egress || [])
    .filter((r) => (r.to || []).some((t) => t.ipBlock))
    .flatMap((r) => (r.ports || []).map((p) => p.port)));
  const allow = econf.allow_ports || [80, 443];
  for (const p of allow) if (!outPorts.has(p)) errs.push(`allow_ports has ${p}, the proxy's policy does not let it out`);
  for (const p of outPorts) if (!allow.includes(p)) errs.push(`the proxy's policy lets out ${p}, which allow_ports refuses`);
  const ipb = (np('vivarium-egress').spec.egress || []).flatMap((r) => (r.to || []).map((t) => t.ipBlock).filter(Boolean));
  for (const priv of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'])
    if (ipb.some((b) => b.cidr === '0.0.0.0/0' && !(b.except || []).includes(priv)))
      errs.push(`the proxy's policy lets out to ${priv}`);
  if (!np('vivarium-default-deny') || Object.keys(np('vivarium-default-deny').spec.podSelector || {}).length)
    errs.push('no default-deny policy for the whole namespace');

  // Secrets the Pod uses exist (in the example) with the keys it reads,
  // and the init container copies the key to where key_file points.
  const ps = sup.spec.template.spec;
  for (const e of sc.env || []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (ref && find(m, 'Secret', ref.name)?.stringData?.[ref.key] === undefined)
      errs.push(`env ${e.name}: no Secret ${ref.name} with key ${ref.key}`);
  }
  for (const v of ps.volumes || []) {
    if (v.secret && !find(m, 'Secret', v.secret.secretName)) errs.push(`volume ${v.name}: no Secret ${v.secret.secretName}`);
    if (v.configMap && !find(m, 'ConfigMap', v.configMap.name)) errs.push(`volume ${v.name}: no ConfigMap ${v.configMap.name}`);
  }
  const keyFile = conf.links?.key_file;
  const init = (ps.initContainers || []).find((x) => x.name === 'link-key');
  if (!init || init.command?.at(-1) !== keyFile) errs.push(`no init container copies the link key to ${keyFile}`);
  // -f names the mounted ConfigMap key.
  const fi = (sc.args || []).indexOf('-f');
  const cfgMount = sc.volumeMounts.find((vm) => ps.volumes.find((v) => v.name === vm.name)?.configMap?.name === 'vivarium-supervisor');
  if (fi < 0 || !cfgMount || sc.args[fi + 1] !== `${cfgMount.mountPath}/supervisor.yaml`)
    errs.push('the supervisor is not started with -f on its mounted ConfigMap');
  return errs;
};

checks['every image is the Makefile\'s version'] = (m) => {
  const errs = [];
  const { conf, kube } = supervisorConf(m);
  for (const o of all(m)) {
    const ps = o.spec?.template?.spec;
    if (!ps) continue;
    for (const c of [...(ps.initContainers || []), ...ps.containers])
      if (c.image !== IMAGE) errs.push(`${o.kind} ${o.metadata.name} container ${c.name}: ${c.image}, not ${IMAGE}`);
  }
  const sandbox = kube.image || conf.image;
  if (sandbox !== IMAGE) errs.push(`the sandboxes run ${sandbox}, not ${IMAGE}`);
  return errs;
};

// The backend's own objects for a user, rendered with the ConfigMap's
// configuration, against the manifests.
checks['what the backend makes fits the manifests'] = (m) => {
  const errs = [];
  const { text, kube } = supervisorConf(m);
  const ns = all(m).find((o) => o.kind === 'Namespace').metadata.name;
  const key = join(TMP, 'link.key');
  writeFileSync(key, 'ab'.repeat(32) + '\n', { mode: 0o600 });
  chmodSync(key, 0o600);
  const f = join(TMP, 'supervisor.yaml');
  writeFileSync(f, text);
  const r = run(join(BIN, 'vivariumctl'), ['-f', f, 'render', '--kubernetes', 'alice'],
    { ...supervisorEnv(m), VIVARIUM_LINK_KEY_FILE: key });
  if (r.code !== 0) return [`vivariumctl render --kubernetes: exit ${r.code}: ${r.out}`];
  let objs;
  try { objs = parseStream(r.out); } catch (e) { return [`render printed no YAML stream: ${e.message}`]; }
  const pod = objs.find((o) => o.kind === 'Pod');
  const pol = objs.find((o) => o.kind === 'NetworkPolicy');
  if (!pod || !pol || !objs.find((o) => o.kind === 'PersistentVolumeClaim'))
    return [`render printed ${objs.map((o) => o.kind)}`];
  for (const o of objs) {
    for (const e of validate(o)) errs.push(`rendered ${o.kind}: ${e}`);
    if (o.metadata.namespace && o.metadata.namespace !== ns) errs.push(`rendered ${o.kind} in ${o.metadata.namespace}`);
  }
  const sup = need(m, 'Deployment', 'vivarium-supervisor').spec.template.metadata.labels;
  const egr = need(m, 'Deployment', 'vivarium-egress').spec.template.metadata.labels;
  // The manifests' policies select the sandbox by the labels it has.
  if (!selects(SANDBOX_LABELS, pod.metadata.labels)) errs.push(`the Pod's labels ${JSON.stringify(pod.metadata.labels)} lack the sandbox labels`);
  // Its policy lets in the supervisor's Pods, lets out to the proxy's.
  const from = (pol.spec.ingress || []).flatMap((x) => x.from || []).map((x) => x.podSelector?.matchLabels);
  const to = (pol.spec.egress || []).flatMap((x) => x.to || []).map((x) => x.podSelector?.matchLabels);
  if (!from.some((s) => selects(s, sup))) errs.push('the sandbox\'s policy does not admit the supervisor\'s Pods');
  if (from.some((s) => selects(s, egr))) errs.push('the sandbox\'s policy admits the egress proxy');
  if (!to.some((s) => selects(s, egr))) errs.push('the sandbox\'s policy does not let it reach the proxy\'s Pods');
  const eport = Number(kube.egress_proxy.split(':').pop());
  const eports = (pol.spec.egress || []).flatMap((x) => (x.ports || []).map((p) => p.port));
  if (!eports.includes(eport)) errs.push(`the sandbox's policy lets out ${eports}, not the proxy's ${eport}`);
  const c = pod.spec.containers[0];
  if (!(c.ports || []).some((p) => p.containerPort === kube.agent_port)) errs.push(`the Pod's agent is not on ${kube.agent_port}`);
  // The manifests' policy lets the supervisor reach the port the agent
  // listens on (its VIVARIUM_PORT).
  const env0 = Object.fromEntries((c.env || []).map((e) => [e.name, e.value]));
  const reach = (need(m, 'NetworkPolicy', 'vivarium-supervisor').spec.egress || [])
    .filter((x) => (x.to || []).some(onlySandboxes)).flatMap((x) => (x.ports || []).map((p) => p.port));
  if (!reach.includes(Number(env0.VIVARIUM_PORT)))
    errs.push(`the agent listens on ${env0.VIVARIUM_PORT}; the supervisor may reach sandboxes on ${reach}`);
  if (c.image !== IMAGE) errs.push(`the Pod runs ${c.image}`);
  const env = Object.fromEntries((c.env || []).map((e) => [e.name, e.value]));
  if (!String(env.http_proxy || '').endsWith(`:${eport}`)) errs.push(`the Pod's http_proxy is ${env.http_proxy}`);
  return errs;
};

// The link key as the kubelet lays out a Secret volume (a symbolic link
// into ..data, group-readable under fsGroup) is refused; the 0600 copy the
// init container makes is taken.  This is why the init container exists.
checks['the link key needs the init container\'s copy'] = (m) => {
  const errs = [];
  const { text } = supervisorConf(m);
  const f = join(TMP, 'supervisor.yaml');
  writeFileSync(f, text);
  const vol = join(TMP, 'secretvol');
  rmSync(vol, { recursive: true, force: true });
  mkdirSync(join(vol, '..2026_01_01'), { recursive: true });
  writeFileSync(join(vol, '..2026_01_01', 'link.key'), 'cd'.repeat(32) + '\n');
  chmodSync(join(vol, '..2026_01_01', 'link.key'), 0o440);
  symlinkSync('..2026_01_01', join(vol, '..data'));
  symlinkSync('..data/link.key', join(vol, 'link.key'));
  const render = (keyFile) => run(join(BIN, 'vivariumctl'), ['-f', f, 'render', '--kubernetes', 'alice'],
    { ...supervisorEnv(m), VIVARIUM_LINK_KEY_FILE: keyFile });
  const direct = render(join(vol, 'link.key'));
  if (direct.code === 0) errs.push('a key file that is a symbolic link into ..data is taken: the init container could go');
  const copy = join(TMP, 'copied.key');
  const inst = run('install', ['-m', '0600', join(vol, 'link.key'), copy]);
  if (inst.code !== 0) return [...errs, `install: ${inst.out}`];
  const r = render(copy);
  if (r.code !== 0) errs.push(`the init container's copy is refused: ${r.out}`);
  return errs;
};

// ---------------------------------------------------------------- mutants

const clone = (m) => ({ files: structuredClone(m.files), texts: structuredClone(m.texts) });	// no dir: not on disk
const pod = (m, d) => need(m, 'Deployment', d).spec.template.spec;
const setConf = (m, edit) => {
  const cm = need(m, 'ConfigMap', 'vivarium-supervisor');
  cm.data['supervisor.yaml'] = edit(cm.data['supervisor.yaml']);
};

// [what is broken, the check that must catch it, the edit]
const MUTANTS = [
  ['a file mode in octal', 'no integer is written in octal',
    (m) => { m.texts['30-supervisor.yaml'][0] = m.texts['30-supervisor.yaml'][0].replace('defaultMode: 288', 'defaultMode: 0440'); }],
  ['a misspelt securityContext field', 'every object is valid and restricted',
    (m) => { pod(m, 'vivarium-egress').securityContxt = pod(m, 'vivarium-egress').securityContext; delete pod(m, 'vivarium-egress').securityContext; }],
  ['the supervisor allowed to escalate', 'every object is valid and restricted',
    (m) => { pod(m, 'vivarium-supervisor').containers[0].securityContext.allowPrivilegeEscalation = true; }],
  ['the init container keeping its capabilities', 'every object is valid and restricted',
    (m) => { delete pod(m, 'vivarium-supervisor').initContainers[0].securityContext.capabilities; }],
  ['the sandboxes in another namespace', 'the namespace enforces, audits and warns at restricted',
    (m) => setConf(m, (t) => t.replace('namespace: vivarium', 'namespace: default'))],
  ['the namespace at baseline', 'the namespace enforces, audits and warns at restricted',
    (m) => { need(m, 'Namespace', 'vivarium').metadata.labels['pod-security.kubernetes.io/enforce'] = 'baseline'; }],
  ['an unknown key in supervisor.yaml', 'vivarium-supervisor -n accepts the ConfigMap as the Pod runs it',
    (m) => setConf(m, (t) => t.replace('  agent_port: 8700', '  agent_prot: 8700'))],
  ['the token taken out of the Deployment', 'vivarium-supervisor -n accepts the ConfigMap as the Pod runs it',
    (m) => { pod(m, 'vivarium-supervisor').containers[0].env = []; }],
  ['a bad listen address for the proxy', 'vivarium-egress -n accepts its ConfigMap',
    (m) => { const cm = need(m, 'ConfigMap', 'vivarium-egress'); cm.data['egress.yaml'] = cm.data['egress.yaml'].replace('0.0.0.0:3128', 'proxy:3128'); }],
  ['the proxy\'s host list emptied', 'vivarium-egress -n accepts its ConfigMap',
    (m) => { need(m, 'ConfigMap', 'vivarium-egress-hosts').data['host-addresses'] = '# nothing\n'; }],
  ['the host list mounted by subPath (never updated)', 'vivarium-egress -n accepts its ConfigMap',
    (m) => { const c = pod(m, 'vivarium-egress').containers[0]; const v = c.volumeMounts.find((x) => x.name === 'hosts'); v.mountPath += '/host-addresses'; v.subPath = 'host-addresses'; }],
  ['a usable token as the placeholder', 'the Secret placeholders are refused by the supervisor',
    (m) => { need(m, 'Secret', 'vivarium-token').stringData.token = 'x'.repeat(32); }],
  ['watch taken from the Role', 'the Role allows exactly the backend\'s calls',
    (m) => { need(m, 'Role', 'vivarium-supervisor').rules[0].verbs = ['get', 'list', 'create', 'delete']; }],
  ['get taken from pods', 'the Role grants exactly what a real session asks',
    (m) => { need(m, 'Role', 'vivarium-supervisor').rules[0].verbs = ['list', 'watch', 'create', 'delete']; }],
  ['patch added for network policies', 'the Role grants exactly what a real session asks',
    (m) => { need(m, 'Role', 'vivarium-supervisor').rules[2].verbs.push('patch'); }],
  ['update taken from network policies', 'the Role allows exactly the backend\'s calls',
    (m) => { const r = need(m, 'Role', 'vivarium-supervisor').rules[2]; r.verbs = r.verbs.filter((v) => v !== 'update'); }],
  ['update added to the Role', 'the Role allows exactly the backend\'s calls',
    (m) => { need(m, 'Role', 'vivarium-supervisor').rules[1].verbs.push('update'); }],
  ['secrets added to the Role', 'the Role allows exactly the backend\'s calls',
    (m) => { need(m, 'Role', 'vivarium-supervisor').rules.push({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }); }],
  ['the binding to another account', 'the Role allows exactly the backend\'s calls',
    (m) => { need(m, 'RoleBinding', 'vivarium-supervisor').subjects[0].name = 'default'; }],
  ['two supervisors', 'the supervisor is one Pod, replaced by Recreate, restricted',
    (m) => { need(m, 'Deployment', 'vivarium-supervisor').spec.replicas = 2; }],
  ['a rolling update of the supervisor', 'the supervisor is one Pod, replaced by Recreate, restricted',
    (m) => { need(m, 'Deployment', 'vivarium-supervisor').spec.strategy = { type: 'RollingUpdate' }; }],
  ['the supervisor\'s Pods relabelled', 'ports, labels and selectors agree across the files',
    (m) => { const d = need(m, 'Deployment', 'vivarium-supervisor'); d.spec.template.metadata.labels['app.kubernetes.io/name'] = 'supervisor'; d.spec.selector.matchLabels['app.kubernetes.io/name'] = 'supervisor'; }],
  ['egress_selector naming another label', 'ports, labels and selectors agree across the files',
    (m) => setConf(m, (t) => t.replace('egress_selector: app.kubernetes.io/name=vivarium-egress', 'egress_selector: app=egress'))],
  ['the proxy Service targeting another port', 'ports, labels and selectors agree across the files',
    (m) => { need(m, 'Service', 'vivarium-egress').spec.ports[0].targetPort = 8080; }],
  ['the supervisor unable to reach the agents', 'ports, labels and selectors agree across the files',
    (m) => { need(m, 'NetworkPolicy', 'vivarium-supervisor').spec.egress[0].ports[0].port = 8000; }],
  ['the proxy let out to 10.0.0.0/8', 'ports, labels and selectors agree across the files',
    (m) => { const b = need(m, 'NetworkPolicy', 'vivarium-egress').spec.egress[0].to[0].ipBlock; b.except = b.except.filter((c) => c !== '10.0.0.0/8'); }],
  ['the proxy admitting anyone in the namespace', 'ports, labels and selectors agree across the files',
    (m) => { need(m, 'NetworkPolicy', 'vivarium-egress').spec.ingress[0].from[0].podSelector = {}; }],
  ['the key copied elsewhere', 'ports, labels and selectors agree across the files',
    (m) => { const c = pod(m, 'vivarium-supervisor').initContainers[0]; c.command[c.command.length - 1] = '/tmp/link.key'; }],
  ['an old image tag', 'every image is the Makefile\'s version',
    (m) => { pod(m, 'vivarium-egress').containers[0].image = 'localhost/vivarium-sandbox:0.0.9'; }],
  ['the sandboxes on another image', 'every image is the Makefile\'s version',
    (m) => setConf(m, (t) => t.replace(/^image: .*$/m, 'image: localhost/vivarium-sandbox:latest'))],
  ['the sandboxes\' agent port moved', 'what the backend makes fits the manifests',
    (m) => setConf(m, (t) => t.replace('agent_port: 8700', 'agent_port: 8701'))],
  ['the backend told another supervisor label', 'what the backend makes fits the manifests',
    (m) => setConf(m, (t) => t.replace('supervisor_selector: app.kubernetes.io/name=vivarium-supervisor', 'supervisor_selector: app.kubernetes.io/name=other'))],
];

// ---------------------------------------------------------------- main

let model;
try {
  const texts = {};
  model = { dir: DIR, files: load(DIR, texts), texts };
} catch (e) {
  fail(`the manifests in ${DIR} parse`, e.message);
  process.exit(1);
}
const files = Object.keys(model.files);
if (files.some((f) => f.endsWith('.example')) && files.some((f) => f.endsWith('.yaml')))
  ok(`the manifests parse: ${files.join(', ')}`);
else fail('the manifests parse', `found ${files.join(', ')}`);

function runCheck(name, m) {
  try { return checks[name](m); } catch (e) { return [`${e.message}`]; }
}
try {
  session = await recordSession();
  ok(`a session on the fake cluster: ${session.requests.length} requests, ${session.used.size} kinds`);
} catch (e) {
  fail('a session on the fake cluster', e.stack);
}

const baseline = {};
for (const name of Object.keys(checks)) {
  const errs = baseline[name] = runCheck(name, model);
  if (errs.length === 0) ok(name);
  else fail(name, errs.join('\n'));
}
// A mutant is caught when its check finds a problem the manifests as they
// are do not have (a check failing already would "catch" anything).
for (const [what, name, edit] of MUTANTS) {
  assert.ok(checks[name], name);
  const m = clone(model);
  try { edit(m); } catch (e) { fail(`mutant "${what}" could be made`, e.message); continue; }
  const fresh = runCheck(name, m).filter((e) => !baseline[name].includes(e));
  if (fresh.length > 0) ok(`fails with ${what}: ${fresh[0].split('\n')[0].slice(0, 120)}`);
  else fail(`"${name}" does not notice ${what}`);
}
console.log(`k8s-manifests: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
