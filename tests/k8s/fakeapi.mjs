// fakeapi.mjs: a small Kubernetes API server and kubelet for the tests.
// A fake because the test machines have no cluster, and a real one would
// not refuse, fail, cut a watch or go away when a test asks it to; this one
// does, and checks every object it is sent against the schemas.  Its HTTP
// plumbing (TLS, routing, the request log, fault rules, down and up) is
// tests/lib/fakeserver.mjs.
//
//   const api = await startFakeApi({ namespace: 'vivarium' });
//   api.url, api.token, api.caFile, api.kubeconfig   (a kubeconfig file for it)
//   api.requests      every request: { verb, resource, name, method, path, query, body, status }
//   api.invalid       objects POSTed that validate.mjs refused (a test fails on any)
//   api.unexpected    requests outside the REST paths of docs/supervisor.md
//   api.objects('pods')  the stored objects; api.pod(name) one
//   api.inject({ verb, resource, status, times, name })   fault injection: an HTTP status
//                     (403 and 500 as Status objects), 'drop' (connection closed, no reply),
//                     and for watches 'cut' (reset mid-stream) or 410 (an Expired ERROR event)
//   api.down() / api.up()   the server stops answering (connection refused) / comes back
//   api.dropWatches()       every open watch is cut (the TCP connection reset)
//   api.compact()           older resourceVersions are gone (watch answers 410)
//   api.kubelet.readyDelayMs / neverReady / terminateDelayMs   how Pods come and go
//   api.kubelet.nextIps   addresses the next Pods get, first in first (a gone Pod's, reused)
//   await api.kubelet.evict(name)   the node evicts the Pod: its agent stopped, phase Failed,
//                     reason Evicted, the object kept (as the kubelet leaves it)
//   api.version = { major, minor, gitVersion }   what /version says (1.31 unless set)
//   api.dropPodFields = ['hostUsers']   spec fields a create drops, as an API server
//                     whose feature gate for them is off does
//   await api.close()
//
// It serves exactly the paths the contract lists: /version, and list (with
// labelSelector, limit and continue), watch (resourceVersion, fieldSelector, labelSelector,
// timeoutSeconds), get, create and delete of pods and
// persistentvolumeclaims in /api/v1 and networkpolicies in
// /apis/networking.k8s.io/v1, and update (PUT) of networkpolicies, in one
// namespace, over HTTPS with a CA made here by openssl and a bearer token.
//
// Where the shapes come from (we wrote our own fixtures; nothing fetched is
// committed):
// - Status objects (kind, apiVersion, metadata {}, status Failure, message,
//   reason, details {name, group, kind}, code) and their messages:
//   k8s.io/apimachinery pkg/api/errors/errors.go (NewNotFound "%s %q not
//   found", NewAlreadyExists "%s %q already exists", NewForbidden "%s %q is
//   forbidden: %v", NewInvalid "%s %q is invalid: %v" with details.causes,
//   NewInternalError "Internal error occurred: %v"), the RBAC sentence from
//   k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go
//   (User %q cannot %s resource %q in API group %q in the namespace %q),
//   and a recorded 409 reply in ManageIQ/kubeclient test/json/
//   namespace_already_exists.json.
// - Watch streams: newline-delimited {"type","object"} events as recorded in
//   ManageIQ/kubeclient test/json/watch_stream_b3.json; a too-old
//   resourceVersion gives HTTP 200 and one ERROR event whose object is a
//   Status with reason Expired, code 410, message "too old resource version:
//   %d (%d)" (k8s.io/apiserver pkg/storage/cacher/watch_cache.go,
//   errors.NewResourceExpired, sent by the cacher's error watcher).
// - Lists: kind PodList (etc.), metadata.resourceVersion, items without
//   kind/apiVersion, as the API server encodes a typed list
//   (kubeclient test/json/pod_list_b3.json shows the list shape).
// - Create: 201 with the object as stored: metadata uid, resourceVersion,
//   creationTimestamp, namespace, managedFields, and the defaults the API
//   server fills in (dnsPolicy, schedulerName, terminationGracePeriodSeconds,
//   terminationMessagePath, imagePullPolicy, probe defaults...), status
//   phase Pending; PVCs get the kubernetes.io/pvc-protection finalizer.
// - Delete: a Pod is answered 200 with itself carrying deletionTimestamp and
//   deletionGracePeriodSeconds and goes only when the kubelet has stopped
//   it; a PVC likewise, once no Pod uses it (pvc-protection); a
//   NetworkPolicy goes at once and the reply is a Status with status
//   Success and details {name, group, kind, uid} (the generic registry's
//   answer for an object deleted immediately).
// - Update (PUT of a whole object): its metadata.resourceVersion must be the
//   stored one, else 409 Conflict "Operation cannot be fulfilled on %s %q:
//   the object has been modified; please apply your changes to the latest
//   version and try again" (apimachinery errors.NewConflict and
//   apiserver pkg/registry/generic/registry OptimisticLockErrorMsg); none
//   is 422 "metadata.resourceVersion: Invalid value: 0x0: must be
//   specified for an update" (stricter than NetworkPolicy's unconditional
//   update, which we never rely on); a missing object 404 (no create on
//   update); a name or namespace other than the URL's 400 BadRequest
//   (endpoints/handlers/update.go); 200 with the object as stored, uid and
//   creationTimestamp kept, a new resourceVersion, generation + 1 when the
//   spec changed.
// - /version: major, minor, gitVersion, gitCommit, gitTreeState, buildDate,
//   goVersion, compiler, platform (k8s.io/apimachinery pkg/version Info).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, appendFileSync, rmSync, chownSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { validate } from './validate.mjs';
import { startFakeServer } from '../lib/fakeserver.mjs';
import { agentCopies } from '../e2e/harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const clone = (o) => structuredClone(o);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

// The three resources of the contract.
export const RESOURCES = {
  pods: { prefix: '/api/v1', apiVersion: 'v1', kind: 'Pod', group: '' },
  persistentvolumeclaims: { prefix: '/api/v1', apiVersion: 'v1', kind: 'PersistentVolumeClaim', group: '' },
  networkpolicies: { prefix: '/apis/networking.k8s.io/v1', apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', group: 'networking.k8s.io' },
};
// qualifiedResource.String(): "pods", "networkpolicies.networking.k8s.io".
const qualified = (r) => (RESOURCES[r].group ? `${r}.${RESOURCES[r].group}` : r);

// ---------------------------------------------------------------- TLS

// A CA and a server certificate for 127.0.0.1 in dir; returns the paths.
export function makeCerts(dir, cn = 'fake-kube-ca') {
  const o = (...a) => execFileSync('openssl', a, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  o('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', `/CN=${cn}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  o('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-apiserver');
  writeFileSync(join(dir, 'server.ext'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n' +
    'extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n');
  o('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext');
  return { ca: join(dir, 'ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
}

// ---------------------------------------------------------------- Status objects

export function status(code, reason, message, details) {
  const s = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: code < 300 ? 'Success' : 'Failure', message, reason };
  if (details) s.details = details;
  s.code = code;
  if (code < 300) { delete s.message; delete s.reason; }
  return s;
}
const det = (resource, name) => ({ ...(name ? { name } : {}), ...(RESOURCES[resource]?.group ? { group: RESOURCES[resource].group } : {}), kind: resource });
const notFound = (r, name) => status(404, 'NotFound', `${qualified(r)} "${name}" not found`, det(r, name));
const alreadyExists = (r, name) => status(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, det(r, name));
function forbidden(r, name, verb, ns, user) {
  const why = `User "${user}" cannot ${verb} resource "${r}" in API group "${RESOURCES[r]?.group ?? ''}" in the namespace "${ns}"`;
  return status(403, 'Forbidden', name ? `${qualified(r)} "${name}" is forbidden: ${why}` : `${qualified(r)} is forbidden: ${why}`, det(r, name));
}
const internal = (msg) => status(500, 'InternalError', `Internal error occurred: ${msg}`, { causes: [{ message: msg }] });
const conflict = (r, name) => status(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(r)} "${name}": the object has been modified; please apply your changes to the latest version and try again`, det(r, name));
// A create's or update's body that is not one of R in namespace ns: a
// 400 Status, else null.
function badBody(o, R, ns) {
  if (!o || typeof o !== 'object') return status(400, 'BadRequest', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`);
  if (o.apiVersion !== R.apiVersion || o.kind !== R.kind)
    return status(400, 'BadRequest', `the API version in the data (${o.apiVersion}) does not match the expected API version (${R.apiVersion})`);
  if (o.metadata?.namespace !== undefined && o.metadata.namespace !== ns)
    return status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
  return null;
}
const unauthorized = () => status(401, 'Unauthorized', 'Unauthorized');
const pathNotFound = () => status(404, 'NotFound', 'the server could not find the requested resource', {});
function invalid(kind, name, errs) {
  const causes = errs.map((e) => {
    const [field, ...rest] = e.split(': ');
    return { reason: 'FieldValueInvalid', message: rest.join(': '), field: field.replace(/^\//, '').replace(/\/(\d+)(?=\/|$)/g, '[$1]').replace(/\//g, '.') };
  });
  return status(422, 'Invalid', `${kind} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
    { name, group: '', kind, causes });
}

// Does a Role's rules allow verb on resource (of our three) named name?
// apiGroups, resources, verbs with '*', and resourceNames (which never
// restrict create or list, as in the real authorizer: no name then).
export function allowedBy(role, verb, resource, name) {
  const group = RESOURCES[resource]?.group ?? '';
  return (role.rules || []).some((r) =>
    (r.apiGroups || []).some((g) => g === '*' || g === group)
    && (r.resources || []).some((x) => x === '*' || x === resource)
    && (r.verbs || []).some((v) => v === '*' || v === verb)
    && (!r.resourceNames?.length || (name !== undefined && r.resourceNames.includes(name))));
}

// ---------------------------------------------------------------- selectors

// Equality- and set-based label selectors (k=v, k==v, k!=v, k, !k,
// k in (a,b), k notin (a,b)); returns a predicate on a labels map.
export function parseLabelSelector(s) {
  if (!s) return () => true;
  const reqs = [];
  // Split on commas outside parentheses.
  let depth = 0, cur = '';
  const parts = [];
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) { parts.push(cur); cur = ''; } else cur += ch;
  }
  parts.push(cur);
  for (let p of parts) {
    p = p.trim();
    let m;
    if ((m = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(p))) {
      const vals = m[3].split(',').map((x) => x.trim());
      reqs.push(m[2] === 'in' ? (l) => vals.includes(l[m[1]]) : (l) => !vals.includes(l[m[1]]));
    } else if ((m = /^([^!=\s]+)\s*!=\s*(.*)$/.exec(p))) reqs.push((l) => l[m[1]] !== m[2]);
    else if ((m = /^([^!=\s]+)\s*==?\s*(.*)$/.exec(p))) reqs.push((l) => l[m[1]] === m[2]);
    else if ((m = /^!([^!=\s]+)$/.exec(p))) reqs.push((l) => !(m[1] in l));
    else if ((m = /^([^!=\s]+)$/.exec(p))) reqs.push((l) => m[1] in l);
    else throw new Error(`unable to parse requirement: ${p}`);
  }
  return (labels) => reqs.every((r) => r(labels || {}));
}

// fieldSelector: metadata.name and metadata.namespace, = == !=.
export function parseFieldSelector(s) {
  if (!s) return () => true;
  const reqs = s.split(',').map((p) => {
    const m = /^(metadata\.name|metadata\.namespace)\s*(==|=|!=)\s*(.*)$/.exec(p.trim());
    if (!m) throw new Error(`field label not supported: ${p}`);
    const get = (o) => (m[1] === 'metadata.name' ? o.metadata.name : o.metadata.namespace);
    return m[2] === '!=' ? (o) => get(o) !== m[3] : (o) => get(o) === m[3];
  });
  return (o) => reqs.every((r) => r(o));
}

// ---------------------------------------------------------------- the server

// rbac: a Role object (rbac.authorization.k8s.io/v1); when given, a request
// its rules do not allow is refused 403 as the real authorizer would, and
// recorded in api.rbacDenied.
export async function startFakeApi({ namespace = 'vivarium', token = randomBytes(16).toString('hex'),
  serviceAccount = 'vivarium-supervisor', kubelet = {}, agentBin, agentEnv = {}, log = false, rbac = null } = {}) {
  const dir = mkdtempSync('/tmp/vk8s-api-');
  chmodSync(dir, 0o755);	// the agents run as the Pods' uids
  const certs = makeCerts(dir);
  const store = { pods: new Map(), persistentvolumeclaims: new Map(), networkpolicies: new Map() };
  let rv = 1000;			// the cluster's resourceVersion counter
  let floor = rv;			// the oldest resourceVersion a watch may start from
  const events = [];		// { rv, resource, type, object }
  const watchers = new Set();	// { resource, match, res }
  const invalidObjs = [], unexpected = [], rbacDenied = [];
  const user = `system:serviceaccount:${namespace}:${serviceAccount}`;
  const say = (...a) => { if (log) console.error('[fakeapi]', ...a); };

  function emit(resource, type, obj) {
    const ev = { rv: Number(obj.metadata.resourceVersion), resource, type, object: clone(obj) };
    events.push(ev);
    for (const w of watchers) if (w.resource === resource && w.match(ev.object)) w.send(ev);
  }
  const bump = (obj) => { obj.metadata.resourceVersion = String(++rv); };
  // Stores a change to a stored object and tells the watchers.
  function modify(resource, name, fn) {
    const o = store[resource].get(name);
    if (!o) return null;
    fn(o);
    bump(o);
    emit(resource, 'MODIFIED', o);
    return o;
  }
  function remove(resource, name) {
    const o = store[resource].get(name);
    if (!o) return;
    store[resource].delete(name);
    bump(o);
    emit(resource, 'DELETED', o);
    if (resource === 'pods') pvcReleased();
    if (resource === 'persistentvolumeclaims') api.kubelet.volumeGone(o);
  }

  // Fault injection: the first matching rule answers instead of the API.
  function fault(verb, resource, name) {
    const f = srv.fault({ verb, resource, name });
    if (!f) return null;
    if (f.status === 403) return forbidden(resource, name, verb, namespace, user);
    if (f.status === 500) return internal(f.message || 'injected fault');
    if (f.status === 'drop' || f.status === 'cut' || f.status === 410) return f.status;
    return status(f.status, f.reason || 'InternalError', f.message || 'injected fault');
  }

  // ------------------------------------------------ defaults the API server fills in
  function defaultPod(p) {
    const s = p.spec;
    s.dnsPolicy ??= 'ClusterFirst';
    s.restartPolicy ??= 'Always';
    s.schedulerName ??= 'default-scheduler';
    s.terminationGracePeriodSeconds ??= 30;
    s.serviceAccountName ??= 'default';
    s.serviceAccount ??= s.serviceAccountName;
    s.securityContext ??= {};
    s.priority ??= 0;
    s.preemptionPolicy ??= 'PreemptLowerPriority';
    s.enableServiceLinks ??= true;
    s.tolerations ??= [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ];
    for (const c of s.containers || []) {
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.imagePullPolicy ??= (/:latest$/.test(c.image) || !/:[^/]+$/.test(c.image)) ? 'Always' : 'IfNotPresent';
      c.resources ??= {};
      for (const port of c.ports || []) port.protocol ??= 'TCP';
      for (const pr of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        if (!c[pr]) continue;
        Object.assign(c[pr], { timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3, ...c[pr] });
        if (c[pr].httpGet) c[pr].httpGet.scheme ??= 'HTTP';
      }
    }
    for (const v of s.volumes || []) if (v.emptyDir) v.emptyDir = { ...v.emptyDir };
    const l = s.containers?.[0]?.resources || {};
    const guaranteed = l.limits && ['cpu', 'memory'].every((k) => l.limits[k] !== undefined && (l.requests?.[k] ?? l.limits[k]) === l.limits[k]);
    p.status = { phase: 'Pending', qosClass: guaranteed ? 'Guaranteed' : (l.limits || l.requests ? 'Burstable' : 'BestEffort') };
  }

  // ------------------------------------------------ request handling
  // Every request: who sent it, and the token checked before anything.
  function authenticate(c) {
    const { req, rec } = c;
    Object.assign(rec, { authorization: req.headers.authorization, userAgent: req.headers['user-agent'] });
    if (req.headers.authorization !== `Bearer ${api.token}`) c.reply(401, unauthorized());
  }

  function version(c) {
    c.rec.verb = 'version';
    const f = fault('version');
    if (f === 'drop') return c.drop();
    if (f) return c.reply(f.code, f);
    return c.reply(200, { major: '1', minor: '31', gitVersion: 'v1.31.0-fake', ...api.version, gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean', buildDate: '2024-08-13T07:28:49Z', goVersion: 'go1.22.5', compiler: 'gc', platform: 'linux/amd64' });
  }

  // A path outside the contract.
  function elsewhere(c) {
    unexpected.push(c.rec);
    return c.reply(404, pathNotFound());
  }

  // /api/v1 and /apis/networking.k8s.io/v1: PREFIX/namespaces/NS/RESOURCE[/NAME].
  const resourcePath = /^(\/api\/v1|\/apis\/networking\.k8s\.io\/v1)\/namespaces\/([^/]+)\/([a-z]+)(?:\/([^/]+))?$/;
  function handle(c) {
    const { req, url: u, rec, params: m } = c;
    const resource = m[3];
    if (!RESOURCES[resource] || RESOURCES[resource].prefix !== m[1]) return elsewhere(c);
    const ns = m[2], name = m[4] ? decodeURIComponent(m[4]) : undefined;
    const watch = ['1', 'true'].includes(u.searchParams.get('watch'));
    const verb = req.method === 'POST' && !name ? 'create'
      : req.method === 'DELETE' && name ? 'delete'
      : req.method === 'PUT' && name && resource === 'networkpolicies' ? 'update'
      : req.method === 'GET' ? (name ? 'get' : watch ? 'watch' : 'list') : null;
    Object.assign(rec, { verb, resource, name, namespace: ns });
    if (!verb) {
      unexpected.push(rec);
      return c.reply(405, status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`, {}));
    }
    // The supervisor's Role is in its own namespace only.
    if (ns !== namespace) return c.reply(403, forbidden(resource, name, verb, ns, user));
    if (rbac && !allowedBy(rbac, verb, resource, name)) {
      rbacDenied.push(rec);
      return c.reply(403, forbidden(resource, name, verb, ns, user));
    }
    const f = fault(verb, resource, name);
    if (f === 'drop') return c.drop();
    if ((f === 'cut' || f === 410) && verb === 'watch') return startWatch(c, resource, f);
    if (f === 'cut' || f === 410) return c.reply(500, internal('a watch fault on a request that is not a watch'));
    if (f) return c.reply(f.code, f);

    const R = RESOURCES[resource];
    const st = store[resource];
    switch (verb) {
    case 'get': {
      const o = st.get(name);
      return o ? c.reply(200, o) : c.reply(404, notFound(resource, name));
    }
    case 'list': {
      let lsel, fsel;
      try {
        lsel = parseLabelSelector(u.searchParams.get('labelSelector'));
        fsel = parseFieldSelector(u.searchParams.get('fieldSelector'));
      } catch (e) { return c.reply(400, status(400, 'BadRequest', e.message)); }
      let items = [...st.values()].filter((o) => lsel(o.metadata.labels) && fsel(o)).map((o) => {
        const item = clone(o);
        delete item.kind;
        delete item.apiVersion;
        return item;
      });
      // Paging: limit, and an opaque continue token for the rest (ours is
      // base64 of the offset; a client must only pass it back).
      const meta = { resourceVersion: String(rv) };
      const from = u.searchParams.get('continue') ? Number(Buffer.from(u.searchParams.get('continue'), 'base64').toString()) : 0;
      const limit = Number(u.searchParams.get('limit') || 0);
      items = items.slice(from);
      if (limit > 0 && items.length > limit) {
        meta.continue = Buffer.from(String(from + limit)).toString('base64');
        meta.remainingItemCount = items.length - limit;
        items = items.slice(0, limit);
      }
      return c.reply(200, { kind: `${R.kind}List`, apiVersion: R.apiVersion, metadata: meta, items });
    }
    case 'watch':
      return startWatch(c, resource);
    case 'create': {
      const o = rec.body;
      const bad = badBody(o, R, ns);
      if (bad) return c.reply(bad.code, bad);
      const errs = validate(o);
      if (errs.length) {
        invalidObjs.push({ object: o, errors: errs });
        return c.reply(422, invalid(R.kind, o.metadata?.name, errs));
      }
      if (st.has(o.metadata.name)) return c.reply(409, alreadyExists(resource, o.metadata.name));
      const obj = clone(o);
      Object.assign(obj.metadata, { namespace: ns, uid: randomUUID(), creationTimestamp: now(),
        managedFields: [{ manager: (rec.userAgent || 'unknown').split('/')[0], operation: 'Update', apiVersion: R.apiVersion,
          time: now(), fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': {} }, 'f:spec': {} } }] });
      if (resource === 'pods') {
        // A disabled feature gate's fields are dropped, not refused
        // (the API server's dropDisabledFields).
        for (const f of api.dropPodFields || []) delete obj.spec[f];
        defaultPod(obj);
      }
      if (resource === 'persistentvolumeclaims') {
        obj.metadata.finalizers = ['kubernetes.io/pvc-protection'];
        obj.spec.volumeMode ??= 'Filesystem';
        obj.status = { phase: 'Pending' };
      }
      bump(obj);
      st.set(obj.metadata.name, obj);
      emit(resource, 'ADDED', obj);
      c.reply(201, obj);
      if (api.afterCreate) api.afterCreate(resource, clone(obj));
      if (resource === 'persistentvolumeclaims') setTimeout(() => bindPvc(obj.metadata.name), 20);
      if (resource === 'pods') api.kubelet.created(obj.metadata.name);
      return;
    }
    case 'update': {
      const o = rec.body;
      const bad = badBody(o, R, ns);
      if (bad) return c.reply(bad.code, bad);
      if (o.metadata?.name !== name)
        return c.reply(400, status(400, 'BadRequest', `the name of the object (${o.metadata?.name}) does not match the name on the URL (${name})`));
      const cur = st.get(name);
      if (!cur) return c.reply(404, notFound(resource, name));
      if (!o.metadata.resourceVersion)
        return c.reply(422, invalid(R.kind, name, ['/metadata/resourceVersion: Invalid value: 0x0: must be specified for an update']));
      if (o.metadata.resourceVersion !== cur.metadata.resourceVersion)
        return c.reply(409, conflict(resource, name));
      const errs = validate(o);
      if (errs.length) {
        invalidObjs.push({ object: o, errors: errs });
        return c.reply(422, invalid(R.kind, name, errs));
      }
      const specChanged = JSON.stringify(o.spec) !== JSON.stringify(cur.spec);
      const obj = modify(resource, name, (x) => {
        const keep = { namespace: ns, uid: x.metadata.uid, creationTimestamp: x.metadata.creationTimestamp,
          managedFields: x.metadata.managedFields, generation: (x.metadata.generation || 1) + (specChanged ? 1 : 0) };
        for (const k of Object.keys(x)) delete x[k];
        Object.assign(x, clone(o));
        Object.assign(x.metadata, keep);
      });
      return c.reply(200, obj);
    }
    case 'delete': {
      const o = st.get(name);
      if (!o) return c.reply(404, notFound(resource, name));
      if (resource === 'networkpolicies') {
        remove(resource, name);
        return c.reply(200, status(200, undefined, undefined, { ...det(resource, name), uid: o.metadata.uid }));
      }
      let reply = o;
      if (!o.metadata.deletionTimestamp) {
        let grace = Number(rec.body?.gracePeriodSeconds ?? u.searchParams.get('gracePeriodSeconds') ?? o.spec?.terminationGracePeriodSeconds ?? 0);
        if (!Number.isFinite(grace) || grace < 0) grace = 0;
        reply = clone(modify(resource, name, (x) => {
          x.metadata.deletionTimestamp = new Date(Date.now() + grace * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
          x.metadata.deletionGracePeriodSeconds = grace;
        }));
        // A Pod with nothing running (evicted) may be gone before we answer.
        if (resource === 'pods') api.kubelet.deleted(name, grace);
        else setImmediate(pvcReleased);
      }
      return c.reply(200, st.get(name) || reply);
    }
    default:
    }
  }

  // A claim is bound by a "provisioner" shortly after it is made.
  function bindPvc(name) {
    modify('persistentvolumeclaims', name, (c) => {
      if (c.metadata.deletionTimestamp) return;
      c.spec.volumeName = `pvc-${c.metadata.uid}`;
      c.status = { phase: 'Bound', accessModes: c.spec.accessModes, capacity: { storage: c.spec.resources.requests.storage } };
    });
    api.kubelet.volumeBound(name);
  }
  // pvc-protection: a claim being deleted goes once no Pod uses it.
  function pvcReleased() {
    for (const c of [...store.persistentvolumeclaims.values()]) {
      if (!c.metadata.deletionTimestamp) continue;
      const used = [...store.pods.values()].some((p) => (p.spec.volumes || []).some((v) => v.persistentVolumeClaim?.claimName === c.metadata.name));
      if (!used) remove('persistentvolumeclaims', c.metadata.name);
    }
  }

  // fault: 'cut' (the connection is reset 150 ms into the stream, as when
  // an API server restarts or a load balancer drops it) or 410 (the
  // resourceVersion is too old, whatever it is).
  function startWatch(c, resource, fault) {
    const { res, url: u, rec } = c;
    let lsel, fsel;
    try {
      lsel = parseLabelSelector(u.searchParams.get('labelSelector'));
      fsel = parseFieldSelector(u.searchParams.get('fieldSelector'));
    } catch (e) { return c.reply(400, status(400, 'BadRequest', e.message)); }
    const match = (o) => lsel(o.metadata.labels) && fsel(o);
    const rvq = u.searchParams.get('resourceVersion');
    const timeout = Number(u.searchParams.get('timeoutSeconds') || 1800);
    rec.status = 200;
    rec.events = [];
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    // The API server flushes the head at once (the watch handler's
    // flusher), before any event.
    res.flushHeaders();
    const w = {
      resource, match, res,
      send(ev) {
        const line = JSON.stringify({ type: ev.type, object: ev.object }) + '\n';
        rec.events.push(ev.type);
        // A real stream splits events across TCP segments as it likes: each
        // line goes in two writes a tick apart, so a reader must join them.
        const cut = Math.max(1, Math.floor(line.length / 2));
        w.pending = (w.pending || Promise.resolve()).then(() => new Promise((r) => {
          if (res.destroyed) return r();
          res.write(line.slice(0, cut));
          setImmediate(() => { if (!res.destroyed) res.write(line.slice(cut)); r(); });
        }));
      },
    };
    const end = () => { watchers.delete(w); clearTimeout(w.timer); };
    const finish = () => { end(); (w.pending || Promise.resolve()).then(() => res.end()); };
    res.on('close', end);
    w.timer = setTimeout(finish, Math.max(0, timeout) * 1000);
    if (fault === 'cut') setTimeout(() => { end(); res.socket?.destroy(); }, 150);
    if (fault === 410 || (rvq && rvq !== '0' && Number(rvq) < floor)) {
      // Too old: one ERROR event, then the stream ends.
      w.send({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${rvq} (${floor})`) });
      finish();
      return;
    }
    if (!rvq || rvq === '0') {
      // "Get state and start at most recent": synthetic ADDED for what exists.
      for (const o of store[resource].values()) if (match(o)) w.send({ type: 'ADDED', object: clone(o) });
    } else {
      for (const ev of events) if (ev.rv > Number(rvq) && ev.resource === resource && match(ev.object)) w.send(ev);
    }
    // Asked for, bookmarks come (the real server sends one about a minute
    // apart; here one at once): an object with only kind and resourceVersion.
    if (['1', 'true'].includes(u.searchParams.get('allowWatchBookmarks')))
      w.send({ type: 'BOOKMARK', object: { kind: RESOURCES[resource].kind, apiVersion: RESOURCES[resource].apiVersion, metadata: { resourceVersion: String(rv) } } });
    watchers.add(w);
  }

  // ------------------------------------------------ listening (tests/lib/fakeserver.mjs)
  const srv = await startFakeServer({
    tls: { key: readFileSync(certs.key), cert: readFileSync(certs.cert) },
    before: authenticate,
    routes: [['GET', '/version', version], ['*', resourcePath, handle]],
    fallback: elsewhere,
    headers: () => ({ 'Audit-Id': randomUUID(), 'Cache-Control': 'no-cache, private' }),
    faultKeys: ['verb', 'resource', 'name'],
    log: say,
  });

  const { url, port } = srv;
  const api = {
    url, port, token, namespace, dir, caFile: certs.ca, caPem: readFileSync(certs.ca, 'utf8'),
    requests: srv.requests, invalid: invalidObjs, unexpected, rbacDenied, tlsErrors: srv.tlsErrors, faults: srv.faults,
    get resourceVersion() { return rv; },
    objects: (resource) => [...store[resource].values()].map(clone),
    get: (resource, name) => (store[resource].has(name) ? clone(store[resource].get(name)) : null),
    pod: (name) => api.get('pods', name),
    // Adds a rule; returns it (rule.hits counts its answers).
    inject({ verb, resource, name, status: code = 500, times = Infinity, reason, message }) {
      return srv.inject({ verb, resource, name, status: code, times, reason, message });
    },
    clearFaults() { srv.clearFaults(); },
    async down() {
      for (const w of watchers) w.res.destroy();
      watchers.clear();
      await srv.down();
    },
    async up() { await srv.up(); },
    dropWatches() { for (const w of [...watchers]) { watchers.delete(w); w.res.socket?.destroy(); } },
    get openWatches() { return watchers.size; },
    // Older resourceVersions are gone: a watch from before now gets 410
    // (bump: one change first, so that the last RV handed out is stale too).
    compact({ bump: b = false } = {}) { if (b) rv++; floor = rv; events.length = 0; },
    // Called after each create has been answered: (resource, object).
    afterCreate: null,
    // Stores an object as if someone else made it (adopt, 409 tests).
    seed(resource, o) {
      const obj = clone(o);
      Object.assign(obj.metadata, { namespace, uid: randomUUID(), creationTimestamp: now() });
      if (resource === 'pods') {
        // A disabled feature gate's fields are dropped, not refused
        // (the API server's dropDisabledFields).
        for (const f of api.dropPodFields || []) delete obj.spec[f];
        defaultPod(obj);
      }
      bump(obj);
      store[resource].set(obj.metadata.name, obj);
      emit(resource, 'ADDED', obj);
      if (resource === 'pods') api.kubelet.created(obj.metadata.name);
      if (resource === 'persistentvolumeclaims') bindPvc(obj.metadata.name);
      return clone(obj);
    },
    // A kubeconfig file for the server (token and CA inline, as
    // `kubectl config view --raw` would show them); opts change one part.
    writeKubeconfig(path, { server = url, tokenValue = token, ca = api.caPem, caFile = false } = {}) {
      const cluster = caFile ? { server, 'certificate-authority': ca } : { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') };
      const kc = {
        apiVersion: 'v1', kind: 'Config', preferences: {},
        clusters: [{ name: 'fake', cluster }],
        users: [{ name: 'vivarium-supervisor', user: { token: tokenValue } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'vivarium-supervisor', namespace } }],
        'current-context': 'fake',
      };
      writeFileSync(path, JSON.stringify(kc, null, 2) + '\n');
      return path;
    },
    // Requests of one verb (and resource).
    calls(verb, resource) { return srv.requests.filter((r) => r.verb === verb && (!resource || r.resource === resource)); },
    async close() {
      // VIVARIUM_K8S_DUMP=FILE: every request of the run, one JSON a line
      // (the token left out), to see what the backend really sends.
      if (process.env.VIVARIUM_K8S_DUMP) {
        appendFileSync(process.env.VIVARIUM_K8S_DUMP, srv.requests.map((r) => JSON.stringify({ ...r,
          authorization: r.authorization === `Bearer ${api.token}` ? 'Bearer <token>' : r.authorization ? 'Bearer <other>' : undefined,
          rawBody: undefined })).join('\n') + '\n');
      }
      await api.kubelet.stopAll();
      await api.down().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  api.kubeconfig = api.writeKubeconfig(join(dir, 'kubeconfig'));
  api.kubelet = makeKubelet(api, { modify, remove, store, agentBin, agentEnv, say, ...kubelet });
  return api;
}

// ---------------------------------------------------------------- the kubelet

// Runs each Pod as a real vivarium-agent on a loopback address of its own
// (127.0.0.N stands for the Pod's network namespace: a 0.0.0.0 bind becomes
// that address), with the Pod's env on top of the image's (Containerfile
// ENV), /workspace a directory per PVC (kept across Pods, gone with the
// claim), /tmp a fresh directory per Pod (emptyDir), as the Pod's uid and
// gid when we are root.  Ready when the Pod's own readinessProbe answers.
function makeKubelet(api, { modify, remove, store, agentBin, agentEnv, say, readyDelayMs = 0 }) {
  const volumesDir = join(api.dir, 'volumes');
  mkdirSync(volumesDir, { mode: 0o755 });
  const running = new Map();	// pod name -> { proc, ip, tmp, stderr, exited }
  let nextIp = 10;
  const asRoot = process.getuid?.() === 0;
  // The Pods' uids may not be able to reach the checkout: as root, run
  // copies of the agent and the runner kept in the API's directory.
  if (asRoot && agentBin) {
    const { agent, python } = agentCopies(api.dir, agentEnv.VIVARIUM_PYTHONPATH);
    agentBin = agent;
    agentEnv = { ...agentEnv, VIVARIUM_PYTHONPATH: python };
  }

  const k = {
    readyDelayMs,
    terminateDelayMs: 0,
    neverReady: false,
    started: 0,
    ips: new Map(),		// pod uid -> ip
    nextIps: [],		// what the next Pods get, before new ones
    logs: new Map(),		// pod name -> agent stderr (last incarnation)
    volumeDir(claim) { return join(volumesDir, claim); },
    created(name) { setImmediate(() => k.sync(name).catch((e) => say('kubelet', name, e))); },
    volumeBound() { for (const name of store.pods.keys()) k.sync(name).catch((e) => say('kubelet', name, e)); },
    volumeGone(claim) { rmSync(k.volumeDir(claim.metadata.name), { recursive: true, force: true }); },
    // Starts a Pod whose volumes are ready, once.
    async sync(name) {
      const pod = store.pods.get(name);
      if (!pod || pod.metadata.deletionTimestamp || running.has(name) || pod.status.phase !== 'Pending') return;
      if (!pod.spec.nodeName) {
        modify('pods', name, (p) => {
          p.spec.nodeName = 'fake-node';
          p.status.conditions = [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }];
        });
      }
      for (const v of pod.spec.volumes || []) {
        const c = v.persistentVolumeClaim && store.persistentvolumeclaims.get(v.persistentVolumeClaim.claimName);
        if (v.persistentVolumeClaim && (!c || c.status?.phase !== 'Bound')) return;	// waits for the claim
      }
      await k.start(name);
    },
    async start(name) {
      const pod = store.pods.get(name);
      const c = pod.spec.containers[0];
      const sc = { ...pod.spec.securityContext, ...c.securityContext };
      const uid = sc.runAsUser ?? 1000, gid = sc.runAsGroup ?? 1000, fsGroup = pod.spec.securityContext?.fsGroup;
      const ip = k.ips.get(pod.metadata.uid) || k.nextIps.shift() || `127.0.0.${nextIp++}`;
      k.ips.set(pod.metadata.uid, ip);
      const tmp = mkdtempSync(join(api.dir, `tmp-${name}-`));
      const mounts = {};
      for (const vm of c.volumeMounts || []) {
        const v = pod.spec.volumes.find((x) => x.name === vm.name);
        let d;
        if (v.persistentVolumeClaim) {
          d = k.volumeDir(v.persistentVolumeClaim.claimName);
          mkdirSync(d, { recursive: true });
        } else if (v.emptyDir) {
          d = vm.mountPath === '/tmp' ? tmp : mkdtempSync(join(api.dir, 'empty-'));
        } else throw new Error(`fake kubelet: volume ${vm.name} of a kind it cannot mount`);
        mounts[vm.mountPath] = d;
        if (asRoot) {
          // fsGroup: the kubelet makes the volume group-owned and setgid.
          chownSync(d, uid, fsGroup ?? gid);
          chmodSync(d, 0o2775);
        }
      }
      const ws = mounts['/workspace'];
      const t = mounts['/tmp'] || tmp;
      if (!ws) throw new Error('fake kubelet: the Pod mounts nothing at /workspace');
      // The image's ENV (Containerfile), its paths moved to the Pod's volumes.
      const image = {
        LANG: 'C.UTF-8', HOME: t, MPLBACKEND: 'Agg', MPLCONFIGDIR: join(t, '.matplotlib'),
        XDG_CACHE_HOME: join(t, '.cache'), XDG_CONFIG_HOME: join(t, '.config'), NUMBA_CACHE_DIR: join(t, '.numba'),
        PYTHONDONTWRITEBYTECODE: '1', VIVARIUM_WORKDIR: ws, VIVARIUM_HOST: '0.0.0.0', VIVARIUM_PORT: '8000',
        VIVARIUM_SWEEP: '1', TMPDIR: t, PATH: process.env.PATH,
        ...agentEnv,
      };
      const env = { ...image };
      for (const e of c.env || []) {
        if (e.valueFrom) throw new Error(`fake kubelet: env ${e.name} uses valueFrom, not supported here`);
        env[e.name] = String(e.value ?? '');
      }
      // The Pod's own network namespace: 0.0.0.0 there is its address here.
      if (env.VIVARIUM_HOST === '0.0.0.0' || env.VIVARIUM_HOST === '::') env.VIVARIUM_HOST = ip;
      const r = { ip, tmp, stderr: '', env, uid, gid, restarts: 0 };
      running.set(name, r);
      k.started++;
      const launch = () => {
        const proc = spawn(agentBin, [], {
          env, cwd: ws, stdio: ['ignore', 'ignore', 'pipe'],
          ...(asRoot ? { uid, gid } : {}),
        });
        r.proc = proc;
        r.exited = new Promise((res) => proc.on('exit', (code, sig) => res(code ?? sig)));
        r.listening = false;
        const mark = r.stderr.length;
        proc.stderr.on('data', (d) => {
          r.stderr += d;
          k.logs.set(name, r.stderr);
          // This agent, not whatever else holds 0.0.0.0 on that port: a real
          // probe runs in the Pod's network namespace, ours cannot.
          if (r.stderr.slice(mark).includes(`listening on http://${ip}:`)) r.listening = true;
        });
        proc.on('exit', (code, sig) => {
          say('agent of', name, 'exited', code, sig);
          if (r.stopping || !store.pods.has(name)) return;
          // restartPolicy Always: not Ready, then a new start.
          modify('pods', name, (p) => {
            setReady(p, false);
            const cs = p.status.containerStatuses[0];
            cs.restartCount = ++r.restarts;
            // What kubectl describe would show: the last lines of its log.
            cs.lastState = { terminated: { exitCode: code ?? 137, reason: 'Error', message: r.stderr.trim().split('\n').slice(-3).join('\n') } };
          });
          if (r.restarts === 3) console.error(`fake kubelet: ${name} keeps exiting:\n${r.stderr.trim().split('\n').slice(-5).join('\n')}`);
          // CrashLoopBackOff, shortened: 200 ms doubling to 5 s.
          setTimeout(() => { if (!r.stopping && store.pods.has(name)) { launch(); k.probe(name, r); } },
            Math.min(5000, 200 * 2 ** (r.restarts - 1)));
        });
      };
      launch();
      modify('pods', name, (p) => {
        const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        p.status = {
          ...p.status, phase: 'Running', hostIP: '127.0.0.1', hostIPs: [{ ip: '127.0.0.1' }], podIP: ip, podIPs: [{ ip }], startTime: ts,
          conditions: [
            { type: 'PodReadyToStartContainers', status: 'True', lastProbeTime: null, lastTransitionTime: ts },
            { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: ts },
            { type: 'Ready', status: 'False', lastProbeTime: null, lastTransitionTime: ts, reason: 'ContainersNotReady', message: `containers with unready status: [${c.name}]` },
            { type: 'ContainersReady', status: 'False', lastProbeTime: null, lastTransitionTime: ts, reason: 'ContainersNotReady', message: `containers with unready status: [${c.name}]` },
            { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: ts },
          ],
          containerStatuses: [{ name: c.name, image: c.image, imageID: `${c.image}@sha256:${'0'.repeat(64)}`, containerID: `containerd://${randomBytes(32).toString('hex')}`,
            ready: false, started: true, restartCount: 0, state: { running: { startedAt: ts } }, lastState: {} }],
        };
      });
      k.probe(name, r);
    },
    // Polls the Pod's readinessProbe; Ready when it answers 2xx/3xx.
    async probe(name, r) {
      const pod = store.pods.get(name);
      const c = pod?.spec.containers[0];
      const hg = c?.readinessProbe?.httpGet;
      const tcp = c?.readinessProbe?.tcpSocket;
      const portOf = (p) => (typeof p === 'string' ? c.ports.find((x) => x.name === p)?.containerPort : p);
      const t0 = Date.now();
      const gen = r.gen = (r.gen || 0) + 1;	// a restart's probe replaces the last one
      for (;;) {
        await sleep(100);
        if (r.stopping || !store.pods.has(name) || r.gen !== gen) return;
        if (k.neverReady || Date.now() - t0 < k.readyDelayMs) continue;
        if (!r.listening || r.proc.exitCode !== null || r.proc.signalCode !== null) continue;
        let ok = false;
        if (hg) ok = await httpProbe(r.ip, portOf(hg.port), hg.path || '/');
        else if (tcp) ok = await tcpProbe(r.ip, portOf(tcp.port));
        else ok = true;
        if (ok) break;
      }
      modify('pods', name, (p) => setReady(p, true));
    },
    async deleted(name, grace) {
      // Terminating takes a while on a real node (the runtime, the volumes).
      if (k.terminateDelayMs) await sleep(k.terminateDelayMs);
      const r = running.get(name);
      if (r) {
        r.stopping = true;
        await stopContainer(r, Math.min(grace, 10) * 1000);
        running.delete(name);
        rmSync(r.tmp, { recursive: true, force: true });
      }
      remove('pods', name);
    },
    // Node-pressure eviction: the kubelet kills the Pod's containers and
    // leaves the object, Failed with reason Evicted, until someone deletes
    // it; its address goes back to the node's pool at once.
    async evict(name) {
      const r = running.get(name);
      if (r) {
        r.stopping = true;
        await stopContainer(r, 0);
        running.delete(name);
        rmSync(r.tmp, { recursive: true, force: true });
      }
      modify('pods', name, (p) => {
        setReady(p, false);
        p.status.phase = 'Failed';
        p.status.reason = 'Evicted';
        p.status.message = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 92Mi. ';
        for (const cs of p.status.containerStatuses || []) {
          cs.state = { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown', message: 'The container could not be located when the pod was terminated' } };
        }
      });
    },
    running: (name) => running.get(name),
    async stopAll() {
      for (const [, r] of running) r.stopping = true;
      await Promise.all([...running.values()].map((r) => stopContainer(r, 0)));
      running.clear();
    },
  };
  return k;
}

// A process's parent and start time (so that a pid used again by another
// process is never taken for it), or null.
function procStat(pid) {
  let stat;
  try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return null; }
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), start: f[19] };
}

// The process and every descendant, from /proc (the container's cgroup,
// as near as a host process gets): [{ pid, start }], the given one first.
function processTree(pid) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(d);
    if (!st) continue;
    if (!kids.has(st.ppid)) kids.set(st.ppid, []);
    kids.get(st.ppid).push({ pid: Number(d), start: st.start });
  }
  const out = [{ pid, start: procStat(pid)?.start }];
  for (let i = 0; i < out.length; i++) out.push(...(kids.get(out[i].pid) || []));
  return out;
}

// Stops a container as the kubelet does: SIGTERM to its first process,
// SIGKILL after graceMs, and then whatever of it is left (the runner
// processes the agent started), so nothing outlives the Pod.
async function stopContainer(r, graceMs) {
  const p = r.proc;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const tree = processTree(p.pid);
  p.kill(graceMs > 0 ? 'SIGTERM' : 'SIGKILL');
  const t = setTimeout(() => p.kill('SIGKILL'), graceMs);
  await r.exited;
  clearTimeout(t);
  for (const { pid, start } of tree.slice(1)) {
    if (procStat(pid)?.start !== start) continue;	// gone, or someone else's now
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

function setReady(p, ready) {
  const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  for (const c of p.status.conditions || []) {
    if (c.type !== 'Ready' && c.type !== 'ContainersReady') continue;
    c.status = ready ? 'True' : 'False';
    c.lastTransitionTime = ts;
    if (ready) { delete c.reason; delete c.message; } else { c.reason = 'ContainersNotReady'; c.message = 'containers with unready status: [sandbox]'; }
  }
  for (const s of p.status.containerStatuses || []) s.ready = ready;
}

function httpProbe(host, port, path) {
  return new Promise((res) => {
    const s = connect({ host, port }, () => {
      s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nUser-Agent: kube-probe/1.31\r\nConnection: close\r\n\r\n`);
    });
    let buf = '';
    s.setTimeout(1000, () => { s.destroy(); res(false); });
    s.on('data', (d) => { buf += d; });
    s.on('error', () => res(false));
    s.on('close', () => res(/^HTTP\/1\.[01] [23]\d\d/.test(buf)));
  });
}
function tcpProbe(host, port) {
  return new Promise((res) => {
    const s = connect({ host, port }, () => { s.destroy(); res(true); });
    s.on('error', () => res(false));
  });
}
