// lib.mjs: what the Kubernetes tests share: the binaries, the fake API
// server with its kubelet set up to run this checkout's agent, the MCP SDK
// client (tests/e2e's pinned copy), and waiting.
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startFakeApi } from './fakeapi.mjs';
import { parseDocuments } from './validate.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const bin = (name, envName) => process.env[envName] || join(repoRoot, 'bin', name);
export const agentBin = bin('vivarium-agent', 'VIVARIUM_AGENT_BIN');
export const supervisorBin = bin('vivarium-supervisor', 'VIVARIUM_SUPERVISOR_BIN');
export const ctlBin = bin('vivariumctl', 'VIVARIUM_CTL_BIN');
export const egressBin = bin('vivarium-egress', 'VIVARIUM_EGRESS_BIN');

// What the sandbox image provides that a host process must be told.
export const agentEnv = {
  VIVARIUM_PYTHON: process.env.VIVARIUM_PYTHON || '/usr/bin/python3',
  VIVARIUM_PYTHONPATH: process.env.VIVARIUM_PYTHONPATH || join(repoRoot, 'python'),
};

const sdk = join(repoRoot, 'tests/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/client');
export const { Client } = await import(join(sdk, 'index.js'));
export const { StreamableHTTPClientTransport } = await import(join(sdk, 'streamableHttp.js'));

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function startApi(opts = {}) {
  return startFakeApi({ agentBin, agentEnv, log: !!process.env.VIVARIUM_K8S_LOG, ...opts });
}

// Polls fn until it returns a truthy value; that value, or throws.
export async function until(fn, { ms = 15000, what = 'condition', step = 50 } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(step);
  }
}

// A connected SDK client straight to an agent at url (headers on every request).
export async function agentClient(url, headers = {}) {
  const c = new Client({ name: 'vivarium-k8s-test', version: '0.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return c;
}

export async function runPython(client, code, args = {}) {
  const r = await client.callTool({ name: 'run_python', arguments: { code, ...args } }, undefined, { timeout: 60000 });
  return { ...r, text: r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n') };
}

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
