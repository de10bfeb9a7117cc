// lib.mjs: what the Kubernetes tests share: the fake API server with its
// kubelet set up to run this checkout's agent, and what a test checks of
// it.  The basics (paths, the SDK client, sleep, until ...) are
// tests/e2e/harness.mjs's.
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { repoRoot, agentBin, runPython as coreRunPython } from '../e2e/harness.mjs';
import { startFakeApi } from './fakeapi.mjs';
import { parseDocuments } from './validate.mjs';

// tests/deploy/k8s-manifests.mjs takes until from here.
export { until } from '../e2e/harness.mjs';

// What the sandbox image provides that a host process must be told.
export const agentEnv = {
  VIVARIUM_PYTHON: process.env.VIVARIUM_PYTHON || '/usr/bin/python3',
  VIVARIUM_PYTHONPATH: process.env.VIVARIUM_PYTHONPATH || join(repoRoot, 'python'),
};

export function startApi(opts = {}) {
  return startFakeApi({ agentBin, agentEnv, log: !!process.env.VIVARIUM_K8S_LOG, ...opts });
}

// runPython with one minute for a call (the core's default is two).
export const runPython = (client, code, args = {}) => coreRunPython(client, code, args, { timeout: 60000 });

// Every object the backend POSTed passed validate(); the test fails with
// the reasons otherwise.  Also: no request outside the contract's paths.
export function assertClean(api) {
  assert.deepEqual(api.invalid.map((x) => `${x.object?.kind} ${x.object?.metadata?.name}:\n  ${x.errors.join('\n  ')}`), [],
    'objects the API server would refuse');
  assert.deepEqual(api.unexpected.map((r) => `${r.method} ${r.path}`), [], 'requests outside the contract\'s REST paths');
  assert.deepEqual(api.rbacDenied.map((r) => `${r.verb} ${r.resource}`), [], 'requests the deploy manifests\' Role does not allow');
}

// What the fake cluster knows of a user's Pod, for a failure message: its
// phase, conditions and restarts, and the last lines of its agent's log.
export function podReport(api, user) {
  const name = `vivarium-${user}`;
  const p = api.pod(name);
  const log = (api.kubelet.logs.get(name) || '').trim().split('\n').slice(-15).join('\n');
  if (!p) return `no Pod ${name}; agent log:\n${log}`;
  const cs = p.status?.containerStatuses?.[0];
  return `Pod ${name} ${p.status?.phase} ${p.status?.podIP || ''} restarts=${cs?.restartCount ?? '-'} ` +
    `conditions=${(p.status?.conditions || []).map((c) => `${c.type}=${c.status}`).join(',')}\nagent log:\n${log}`;
}

// Runs fn; on failure the error also says what the user's Pod was doing.
export async function withReport(api, user, fn) {
  try {
    return await fn();
  } catch (e) {
    e.message += `\n--- ${podReport(api, user)}`;
    throw e;
  }
}

// The supervisor's Role from deploy/kubernetes/ when the checkout has it
// (the manifests of the deploy work), else null: then every e2e test also
// proves the Role allows what the backend does.  The Role taken is the one
// whose rules name pods.
export function deployRole() {
  const dir = join(repoRoot, 'deploy/kubernetes');
  if (!existsSync(dir)) return null;
  for (const f of readdirSync(dir).filter((x) => /\.ya?ml$/.test(x)).sort()) {
    for (const d of parseDocuments(readFileSync(join(dir, f), 'utf8'))) {
      if (d?.kind === 'Role' && (d.rules || []).some((r) => (r.resources || []).includes('pods'))) return d;
    }
  }
  return null;
}
