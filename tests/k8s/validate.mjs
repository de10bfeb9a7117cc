// validate.mjs: is this an object a Kubernetes API server would accept,
// and would a namespace at the "restricted" Pod Security level admit it?
//
//   import { validate } from './validate.mjs';
//   const errors = validate(obj);   // [] when valid, else strings "path: why"
//
//   node tests/k8s/validate.mjs FILE...   (YAML, multi-document, or JSON)
//   exits 0 when every document is valid, 1 otherwise, and says why.
//
// Three layers, each of which can refuse an object:
// 1. The OpenAPI schemas of the Kubernetes API (npm kubernetes-models,
//    generated from the API server's own openapi spec): types, required
//    fields, enums, quantity and int-or-string formats.
// 2. Unknown fields.  The schemas do not forbid them and a real API server
//    only warns and drops them (fieldValidation defaults to Warn), so a
//    misspelt "securityContxt" would silently lose the security settings.
//    The compiled validators read exactly the fields their schema knows, so
//    we hand them the object behind a Proxy that notes every field read:
//    a field never read is one the schema does not have.  Maps (labels,
//    resources.limits) are enumerated by the validator and so all count.
// 3. What the API server's validation adds beyond the schema (names,
//    label syntax, port ranges, volume references), the part a 422 Invalid
//    would catch, and the Pod Security Standards "restricted" profile
//    (https://kubernetes.io/docs/concepts/security/pod-security-standards/,
//    the policy as of v1.25+, as pod-security-admission enforces it), for a
//    Pod and for the pod template of a workload (Deployment, Job, ...).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as storage from 'kubernetes-models/storage.k8s.io/v1';
import * as node from 'kubernetes-models/node.k8s.io/v1';

const groups = {
  v1: core, 'apps/v1': apps, 'batch/v1': batch, 'networking.k8s.io/v1': networking,
  'rbac.authorization.k8s.io/v1': rbac, 'policy/v1': policy, 'storage.k8s.io/v1': storage,
  'node.k8s.io/v1': node,
};

// The model class for apiVersion/kind, or null.
function modelFor(apiVersion, kind) {
  const g = groups[apiVersion];
  const M = g && Object.hasOwn(g, kind) ? g[kind] : null;
  return M && M.kind === kind ? M : null;
}

// ---------------------------------------------------------------- layer 1+2

// obj behind a Proxy that records reads; returns { proxy, unknown() }.
function tracked(obj) {
  const info = new WeakMap();	// target -> { path, read:Set, map:bool }
  const proxies = new WeakMap();
  const wrap = (v, path) => {
    if (v === null || typeof v !== 'object') return v;
    if (proxies.has(v)) return proxies.get(v);
    const meta = { path, read: new Set(), map: false };
    info.set(v, meta);
    const p = new Proxy(v, {
      get(t, k) {
        if (typeof k !== 'string') return Reflect.get(t, k);
        meta.read.add(k);
        const val = Reflect.get(t, k);
        return Object.hasOwn(t, k) ? wrap(val, `${path}/${k}`) : val;
      },
      has(t, k) { if (typeof k === 'string') meta.read.add(k); return Reflect.has(t, k); },
      ownKeys(t) { meta.map = true; return Reflect.ownKeys(t); },
    });
    proxies.set(v, p);
    return p;
  };
  const proxy = wrap(obj, '');
  const unknown = () => {
    const out = [];
    const walk = (v) => {
      if (v === null || typeof v !== 'object') return;
      const meta = info.get(v);
      if (!meta) return;	// the validator never looked inside
      if (Array.isArray(v)) { v.forEach(walk); return; }
      for (const k of Object.keys(v)) {
        if (!meta.map && !meta.read.has(k)) out.push(`${meta.path}/${k}: unknown field`);
        else walk(v[k]);
      }
    };
    walk(obj);
    return out;
  };
  return { proxy, unknown };
}

function schemaErrors(obj) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return ['/: not an object'];
  if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string')
    return ['/: apiVersion and kind are required strings'];
  const M = modelFor(obj.apiVersion, obj.kind);
  if (!M) return [`/: no schema for ${obj.apiVersion} ${obj.kind} (known groups: ${Object.keys(groups).join(', ')})`];
  // The model's validate() is runValidateFunc(schema, this): called on the
  // tracked object itself, it checks exactly obj (a model instance would
  // be a copy, and the reads would not be seen).
  const { proxy, unknown } = tracked(obj);
  const errs = [];
  try {
    M.prototype.validate.call(proxy);
  } catch (e) {
    const list = e.errors || e.validation;
    if (Array.isArray(list)) for (const x of list) errs.push(`${x.instancePath || '/'}: ${x.message || x.keyword} ${x.params ? JSON.stringify(x.params) : ''}`.trim());
    else errs.push(`/: ${e.message}`);
  }
  return [...errs, ...unknown()];
}

// ---------------------------------------------------------------- layer 3: the API server's own checks

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

function qualifiedKey(k) {
  const i = k.lastIndexOf('/');
  const prefix = i >= 0 ? k.slice(0, i) : null, name = i >= 0 ? k.slice(i + 1) : k;
  if (prefix !== null && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return false;
  return name.length > 0 && name.length <= 63 && QUALIFIED_NAME.test(name);
}

function metaErrors(obj, errs) {
  const m = obj.metadata;
  if (!m || typeof m !== 'object') { errs.push('/metadata: required'); return; }
  if (!m.name && !m.generateName) errs.push('/metadata/name: required');
  if (m.name !== undefined) {
    // Pods, PVCs, NetworkPolicies, Deployments...: DNS-1123 subdomain;
    // Services and Namespaces are stricter (DNS-1123 label).
    const label = obj.kind === 'Service' || obj.kind === 'Namespace';
    const re = label ? DNS1123_LABEL : DNS1123_SUBDOMAIN;
    if (typeof m.name !== 'string' || !re.test(m.name) || m.name.length > (label ? 63 : 253))
      errs.push(`/metadata/name: ${JSON.stringify(m.name)} is not a valid ${label ? 'DNS-1123 label' : 'DNS-1123 subdomain'}`);
  }
  if (m.namespace !== undefined && (typeof m.namespace !== 'string' || !DNS1123_LABEL.test(m.namespace)))
    errs.push(`/metadata/namespace: ${JSON.stringify(m.namespace)} is not a valid namespace`);
  labelErrors(m.labels, '/metadata/labels', errs);
  for (const k of Object.keys(m.annotations || {}))
    if (!qualifiedKey(k)) errs.push(`/metadata/annotations: key ${JSON.stringify(k)} is not a qualified name`);
}

function labelErrors(labels, path, errs) {
  for (const [k, v] of Object.entries(labels || {})) {
    if (!qualifiedKey(k)) errs.push(`${path}: key ${JSON.stringify(k)} is not a qualified name`);
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
      errs.push(`${path}/${k}: value ${JSON.stringify(v)} is not a valid label value`);
  }
}

function selectorErrors(sel, path, errs) {
  if (!sel) return;
  labelErrors(sel.matchLabels, `${path}/matchLabels`, errs);
  for (const [i, e] of (sel.matchExpressions || []).entries()) {
    if (!qualifiedKey(e.key || '')) errs.push(`${path}/matchExpressions/${i}/key: not a qualified name`);
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator))
      errs.push(`${path}/matchExpressions/${i}/operator: ${JSON.stringify(e.operator)}`);
  }
}

const validPort = (p) => Number.isInteger(p) && p >= 1 && p <= 65535;

// Quantities to numbers, for requests <= limits.
function quantity(q) {
  if (typeof q === 'number') return q;
  const m = /^([+-]?[0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|e[0-9]+)?$/.exec(String(q));
  if (!m) return NaN;
  const mult = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
    Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
  const s = m[2];
  return Number(m[1]) * (s === undefined ? 1 : s.startsWith('e') ? 10 ** Number(s.slice(1)) : mult[s]);
}

function podSpecErrors(spec, path, errs) {
  if (!spec || typeof spec !== 'object') return;
  const volumes = new Map();
  for (const [i, v] of (spec.volumes || []).entries()) {
    if (!DNS1123_LABEL.test(v.name || '')) errs.push(`${path}/volumes/${i}/name: not a DNS-1123 label`);
    if (volumes.has(v.name)) errs.push(`${path}/volumes/${i}/name: duplicate ${v.name}`);
    const sources = Object.keys(v).filter((k) => k !== 'name');
    if (sources.length !== 1) errs.push(`${path}/volumes/${i}: exactly one volume source, not ${sources.length}`);
    volumes.set(v.name, v);
  }
  const all = [...(spec.initContainers || []).map((c, i) => [c, `${path}/initContainers/${i}`]),
    ...(spec.containers || []).map((c, i) => [c, `${path}/containers/${i}`])];
  if (!(spec.containers || []).length) errs.push(`${path}/containers: at least one container`);
  const names = new Set();
  for (const [c, cp] of all) {
    if (!DNS1123_LABEL.test(c.name || '') || c.name.length > 63) errs.push(`${cp}/name: not a DNS-1123 label`);
    if (names.has(c.name)) errs.push(`${cp}/name: duplicate ${c.name}`);
    names.add(c.name);
    if (!c.image) errs.push(`${cp}/image: required`);
    const envs = new Set();
    for (const [j, e] of (c.env || []).entries()) {
      if (!ENV_NAME.test(e.name || '')) errs.push(`${cp}/env/${j}/name: ${JSON.stringify(e.name)} is not a valid variable name`);
      if (e.value !== undefined && e.valueFrom !== undefined) errs.push(`${cp}/env/${j}: value and valueFrom both set`);
      envs.add(e.name);
    }
    for (const [j, p] of (c.ports || []).entries()) {
      if (!validPort(p.containerPort)) errs.push(`${cp}/ports/${j}/containerPort: ${p.containerPort} not in 1..65535`);
      if (p.protocol !== undefined && !['TCP', 'UDP', 'SCTP'].includes(p.protocol)) errs.push(`${cp}/ports/${j}/protocol: ${p.protocol}`);
    }
    const mounts = new Set();
    for (const [j, vm] of (c.volumeMounts || []).entries()) {
      if (!volumes.has(vm.name)) errs.push(`${cp}/volumeMounts/${j}/name: no volume ${JSON.stringify(vm.name)}`);
      if (typeof vm.mountPath !== 'string' || !vm.mountPath.startsWith('/')) errs.push(`${cp}/volumeMounts/${j}/mountPath: must be absolute`);
      if (mounts.has(vm.mountPath)) errs.push(`${cp}/volumeMounts/${j}/mountPath: duplicate ${vm.mountPath}`);
      mounts.add(vm.mountPath);
    }
    const lim = c.resources?.limits || {}, req = c.resources?.requests || {};
    for (const [k, v] of Object.entries(req))
      if (lim[k] !== undefined && quantity(v) > quantity(lim[k])) errs.push(`${cp}/resources/requests/${k}: ${v} exceeds the limit ${lim[k]}`);
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      const pr = c[probe];
      if (!pr) continue;
      const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => pr[h] !== undefined);
      if (handlers.length !== 1) errs.push(`${cp}/${probe}: exactly one handler, not ${handlers.length}`);
      const port = pr.httpGet?.port ?? pr.tcpSocket?.port;
      if (typeof port === 'number' && !validPort(port)) errs.push(`${cp}/${probe}: port ${port} not in 1..65535`);
      if (typeof port === 'string' && !(c.ports || []).some((p) => p.name === port)) errs.push(`${cp}/${probe}: no container port named ${port}`);
    }
  }
  if (spec.restartPolicy !== undefined && !['Always', 'OnFailure', 'Never'].includes(spec.restartPolicy))
    errs.push(`${path}/restartPolicy: ${spec.restartPolicy}`);
  if (spec.runtimeClassName !== undefined && !DNS1123_SUBDOMAIN.test(spec.runtimeClassName))
    errs.push(`${path}/runtimeClassName: not a DNS-1123 subdomain`);
}

function apiErrors(obj, errs) {
  metaErrors(obj, errs);
  const s = obj.spec;
  switch (obj.kind) {
  case 'Pod':
    podSpecErrors(s, '/spec', errs);
    break;
  case 'PersistentVolumeClaim':
    if (!s?.accessModes?.length) errs.push('/spec/accessModes: at least one access mode is required');
    for (const m of s?.accessModes || [])
      if (!['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'].includes(m)) errs.push(`/spec/accessModes: ${m}`);
    if (s?.resources?.requests?.storage === undefined) errs.push('/spec/resources/requests/storage: required');
    else if (!(quantity(s.resources.requests.storage) > 0)) errs.push('/spec/resources/requests/storage: must be greater than zero');
    break;
  case 'NetworkPolicy':
    if (!s?.podSelector) errs.push('/spec/podSelector: required');
    selectorErrors(s?.podSelector, '/spec/podSelector', errs);
    for (const t of s?.policyTypes || []) if (!['Ingress', 'Egress'].includes(t)) errs.push(`/spec/policyTypes: ${t}`);
    for (const dir of ['ingress', 'egress']) {
      for (const [i, r] of (s?.[dir] || []).entries()) {
        for (const [j, p] of (r.ports || []).entries()) {
          if (p.protocol !== undefined && !['TCP', 'UDP', 'SCTP'].includes(p.protocol)) errs.push(`/spec/${dir}/${i}/ports/${j}/protocol: ${p.protocol}`);
          if (typeof p.port === 'number' && !validPort(p.port)) errs.push(`/spec/${dir}/${i}/ports/${j}/port: ${p.port}`);
        }
        for (const [j, peer] of (r[dir === 'ingress' ? 'from' : 'to'] || []).entries()) {
          const pp = `/spec/${dir}/${i}/${dir === 'ingress' ? 'from' : 'to'}/${j}`;
          if (peer.ipBlock && (peer.podSelector || peer.namespaceSelector)) errs.push(`${pp}: ipBlock with a selector`);
          selectorErrors(peer.podSelector, `${pp}/podSelector`, errs);
          selectorErrors(peer.namespaceSelector, `${pp}/namespaceSelector`, errs);
        }
      }
    }
    break;
  case 'Deployment': case 'StatefulSet': case 'DaemonSet': case 'ReplicaSet':
    if (!s?.selector) errs.push('/spec/selector: required');
    selectorErrors(s?.selector, '/spec/selector', errs);
    // The selector must select the template's own labels.
    for (const [k, v] of Object.entries(s?.selector?.matchLabels || {}))
      if (s?.template?.metadata?.labels?.[k] !== v) errs.push(`/spec/selector: ${k}=${v} does not match the template's labels`);
    podSpecErrors(s?.template?.spec, '/spec/template/spec', errs);
    break;
  case 'Job':
    podSpecErrors(s?.template?.spec, '/spec/template/spec', errs);
    break;
  case 'CronJob':
    podSpecErrors(s?.jobTemplate?.spec?.template?.spec, '/spec/jobTemplate/spec/template/spec', errs);
    break;
  case 'Service':
    for (const [i, p] of (s?.ports || []).entries())
      if (!validPort(p.port)) errs.push(`/spec/ports/${i}/port: ${p.port} not in 1..65535`);
    break;
  default:
  }
}

// ---------------------------------------------------------------- Pod Security Standards, restricted

// The pod spec and pod metadata a workload object carries, or null.
function podOf(obj) {
  const s = obj.spec;
  switch (obj.kind) {
  case 'Pod': return { meta: obj.metadata || {}, spec: s, path: '/spec' };
  case 'Deployment': case 'StatefulSet': case 'DaemonSet': case 'ReplicaSet': case 'Job':
    return { meta: s?.template?.metadata || {}, spec: s?.template?.spec, path: '/spec/template/spec' };
  case 'CronJob':
    return { meta: s?.jobTemplate?.spec?.template?.metadata || {}, spec: s?.jobTemplate?.spec?.template?.spec,
      path: '/spec/jobTemplate/spec/template/spec' };
  default: return null;
  }
}

// Baseline: capabilities a container may add.
const BASELINE_CAPS = new Set(['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
  'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT']);
const SAFE_SYSCTLS = new Set(['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
// Restricted: the only volume sources allowed.
const RESTRICTED_VOLUMES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral',
  'persistentVolumeClaim', 'projected', 'secret']);

// Errors, one per violated control; [] for anything that has no pod spec.
export function podSecurityErrors(obj) {
  const pod = obj && typeof obj === 'object' ? podOf(obj) : null;
  if (!pod || !pod.spec) return [];
  const { meta, spec, path } = pod;
  const errs = [];
  const psc = spec.securityContext || {};
  const containers = [
    ...(spec.initContainers || []).map((c, i) => [c, `${path}/initContainers/${i}`]),
    ...(spec.containers || []).map((c, i) => [c, `${path}/containers/${i}`]),
    ...(spec.ephemeralContainers || []).map((c, i) => [c, `${path}/ephemeralContainers/${i}`]),
  ];
  const bad = (control, where, why) => errs.push(`${where}: restricted ${control}: ${why}`);

  // --- baseline
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC'])
    if (spec[f] === true) bad('host namespaces', `${path}/${f}`, 'must be false or unset');
  if (psc.windowsOptions?.hostProcess === true) bad('HostProcess', `${path}/securityContext/windowsOptions/hostProcess`, 'must be false or unset');
  for (const [i, v] of (spec.volumes || []).entries()) {
    if (v.hostPath !== undefined) bad('hostPath volumes', `${path}/volumes/${i}`, 'hostPath is forbidden');
    for (const k of Object.keys(v))
      if (k !== 'name' && !RESTRICTED_VOLUMES.has(k)) bad('volume types', `${path}/volumes/${i}/${k}`, `volume type ${k} is not allowed`);
  }
  const seLinux = (o, where) => {
    if (!o) return;
    if (!SELINUX_TYPES.has(o.type ?? '')) bad('SELinux', `${where}/type`, `${o.type} is not allowed`);
    if (o.user) bad('SELinux', `${where}/user`, 'must be unset');
    if (o.role) bad('SELinux', `${where}/role`, 'must be unset');
  };
  seLinux(psc.seLinuxOptions, `${path}/securityContext/seLinuxOptions`);
  for (const s of psc.sysctls || [])
    if (!SAFE_SYSCTLS.has(s.name)) bad('sysctls', `${path}/securityContext/sysctls`, `${s.name} is not a safe sysctl`);
  const apparmor = (p, where) => {
    if (p && !['RuntimeDefault', 'Localhost'].includes(p.type)) bad('AppArmor', where, `${p.type} is not allowed`);
  };
  apparmor(psc.appArmorProfile, `${path}/securityContext/appArmorProfile`);
  for (const [k, v] of Object.entries(meta.annotations || {}))
    if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') && v !== 'runtime/default' && !String(v).startsWith('localhost/'))
      bad('AppArmor', '/metadata/annotations', `${k}=${v} is not allowed`);

  // --- restricted, pod level
  if (psc.runAsUser === 0) bad('running as non-root user', `${path}/securityContext/runAsUser`, 'must not be 0');
  const podSeccomp = psc.seccompProfile?.type;
  if (podSeccomp !== undefined && !['RuntimeDefault', 'Localhost'].includes(podSeccomp))
    bad('seccomp', `${path}/securityContext/seccompProfile/type`, `${podSeccomp} is not allowed`);

  for (const [c, cp] of containers) {
    const sc = c.securityContext || {};
    const scp = `${cp}/securityContext`;
    // baseline, per container
    if (sc.privileged === true) bad('privileged', `${scp}/privileged`, 'must be false or unset');
    if (sc.windowsOptions?.hostProcess === true) bad('HostProcess', `${scp}/windowsOptions/hostProcess`, 'must be false or unset');
    for (const [j, p] of (c.ports || []).entries())
      if (p.hostPort) bad('host ports', `${cp}/ports/${j}/hostPort`, 'must be 0 or unset');
    seLinux(sc.seLinuxOptions, `${scp}/seLinuxOptions`);
    if (sc.procMount !== undefined && sc.procMount !== 'Default') bad('/proc mount type', `${scp}/procMount`, 'must be Default or unset');
    apparmor(sc.appArmorProfile, `${scp}/appArmorProfile`);
    for (const cap of sc.capabilities?.add || [])
      if (!BASELINE_CAPS.has(cap)) bad('capabilities', `${scp}/capabilities/add`, `${cap} is not allowed`);
    // restricted, per container
    if (sc.allowPrivilegeEscalation !== false) bad('privilege escalation', `${scp}/allowPrivilegeEscalation`, 'must be false');
    if (sc.runAsNonRoot === false || (sc.runAsNonRoot !== true && psc.runAsNonRoot !== true))
      bad('running as non-root', `${scp}/runAsNonRoot`, 'must be true (here or in the pod securityContext)');
    if (sc.runAsUser === 0) bad('running as non-root user', `${scp}/runAsUser`, 'must not be 0');
    const t = sc.seccompProfile?.type;
    if (t !== undefined ? !['RuntimeDefault', 'Localhost'].includes(t) : podSeccomp === undefined)
      bad('seccomp', `${scp}/seccompProfile/type`, 'must be RuntimeDefault or Localhost (here or in the pod securityContext)');
    const drop = sc.capabilities?.drop || [];
    if (!drop.includes('ALL')) bad('capabilities', `${scp}/capabilities/drop`, 'must include ALL');
    for (const cap of sc.capabilities?.add || [])
      if (cap !== 'NET_BIND_SERVICE') bad('capabilities', `${scp}/capabilities/add`, `only NET_BIND_SERVICE may be added, not ${cap}`);
  }
  return errs;
}

// ---------------------------------------------------------------- the API

// Every reason obj would be refused, [] when none.  opts.podSecurity
// (default true) applies the restricted profile to pod specs.
export function validate(obj, { podSecurity = true } = {}) {
  const errs = schemaErrors(obj);
  if (errs.length && /no schema for|not an object|are required strings/.test(errs[0])) return errs;
  apiErrors(obj, errs);
  if (podSecurity) errs.push(...podSecurityErrors(obj));
  return errs;
}

// Throws an Error listing every reason when obj is not valid.
export function assertValid(obj, opts) {
  const errs = validate(obj, opts);
  if (errs.length) {
    const what = `${obj?.kind ?? '?'} ${obj?.metadata?.name ?? '?'}`;
    throw new Error(`${what} is not valid:\n  ${errs.join('\n  ')}`);
  }
}

// The documents of a YAML (multi-document) or JSON file's text.
export function parseDocuments(text) {
  const docs = [];
  for (const d of parseAllDocuments(text)) {
    if (d.errors?.length) throw new Error(d.errors.map((e) => e.message).join('; '));
    const v = d.toJS();
    if (v === null || v === undefined) continue;	// an empty document (a trailing ---)
    if (v.kind === 'List' && Array.isArray(v.items)) docs.push(...v.items);
    else docs.push(v);
  }
  return docs;
}

// ---------------------------------------------------------------- the CLI

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = process.argv.slice(2);
  if (!files.length) {
    console.error('usage: node tests/k8s/validate.mjs FILE...  (YAML or JSON; - for stdin)');
    process.exit(2);
  }
  let bad = 0, n = 0;
  for (const f of files) {
    let docs;
    try {
      docs = parseDocuments(readFileSync(f === '-' ? 0 : f, 'utf8'));
    } catch (e) {
      console.error(`${f}: ${e.message}`);
      bad++;
      continue;
    }
    if (!docs.length) { console.error(`${f}: no documents`); bad++; continue; }
    for (const [i, d] of docs.entries()) {
      n++;
      const errs = validate(d);
      const what = `${f}[${i}] ${d?.kind ?? '?'} ${d?.metadata?.name ?? '?'}`;
      if (errs.length) { bad++; console.log(`FAIL ${what}\n  ${errs.join('\n  ')}`); }
      else console.log(`ok   ${what}`);
    }
  }
  console.log(`${n - Math.min(n, bad)} valid, ${bad} invalid`);
  process.exit(bad ? 1 : 0);
}
