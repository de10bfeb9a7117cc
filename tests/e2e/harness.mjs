// harness.mjs: the core of the Node tests' helpers.  Each basic is
// defined here once; the domain modules import it and add their own.
//
//   tests/e2e/harness.mjs     repoRoot; every program's path (VIVARIUM_*_BIN
//                             overrides it); the MCP SDK clients (1.x and
//                             2026's) and undici; makeFetch, connectClient,
//                             connect2026, replyOf; startServer, startAgent,
//                             agentCopies; sleep, until, freePort, median;
//                             textOf, callTool, runPython
//   tests/supervisor/lib.mjs  a private Podman (tests/lib/podman.sh) and the
//                             supervisor on it: TOKEN, IMAGE, TAG, vp, ...
//   tests/files/lib.mjs       links: the browser, tokens, multipart bodies,
//                             memory readings, the agent and supervisor targets
//   tests/k8s/lib.mjs         the fake Kubernetes API and what a test checks
//                             of it
//   tests/lib/fakeserver.mjs  the fake API servers' HTTP plumbing (node's
//                             built-ins only: it loads without node_modules)
//
// The bare imports below resolve from tests/e2e/node_modules, beside this
// file; modules elsewhere take the SDK and undici from here, not by path.
//
// startAgent runs a real vivarium-agent with a temporary workspace and
// talks to it with the official MCP TypeScript SDK client (the one
// LibreChat uses), over TCP or over a unix socket:
//
//   import { startAgent } from './harness.mjs';
//   const agent = await startAgent({ transport: 'unix', env: { VIVARIUM_MAX_TIMEOUT: '5' } });
//   const client = await agent.connect();            // a connected SDK Client
//   const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
//   const raw = await agent.post('{"jsonrpc":"2.0","id":1,"method":"ping"}');
//   await agent.stop();                              // SIGTERM; returns the exit code
//
// startServer() is the generic part (any program that logs "listening on
// http://HOST:PORT/" or listens on a socket path you give it).

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, existsSync, cpSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as undici from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
// The 2.x client, for the 2026-07-28 protocol (the SDK above speaks the
// 2025 eras).
import { Client as Client2026, StreamableHTTPClientTransport as Transport2026 } from '@modelcontextprotocol/client';

export { undici, Client, StreamableHTTPClientTransport, Client2026, Transport2026 };
export { ErrorCode, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');

// A program of this checkout: $envName when set (make passes the build's,
// e.g. the sanitizer one), else bin/<name>.
const bin = (name, envName) => process.env[envName] || join(repoRoot, 'bin', name);
export const agentBin = bin('vivarium-agent', 'VIVARIUM_AGENT_BIN');
export const supervisorBin = bin('vivarium-supervisor', 'VIVARIUM_SUPERVISOR_BIN');
export const ctlBin = bin('vivariumctl', 'VIVARIUM_CTL_BIN');
export const egressBin = bin('vivarium-egress', 'VIVARIUM_EGRESS_BIN');

// Copies of the agent and the runner in dir (0755), for an agent run as
// another uid: that uid may not be able to reach the checkout (a clone
// under a 0700 directory, /root or mktemp -d's, say).  Returns their paths.
export function agentCopies(dir, pythonpath = process.env.VIVARIUM_PYTHONPATH || join(repoRoot, 'python')) {
  const agent = join(dir, 'vivarium-agent');
  cpSync(agentBin, agent);
  chmodSync(agent, 0o755);
  const python = join(dir, 'python');
  cpSync(pythonpath, python, { recursive: true });
  return { agent, python };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The median of a list of numbers (the mean of the middle two for an even
// count), for the benchmarks.
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// Polls fn every step ms until it returns something truthy, and returns
// that.  Past ms it throws, naming what it waited for; with soft it
// returns the last (falsy) value instead, for the caller to assert on.
export async function until(fn, { ms = 15000, what = 'condition', step = 50, soft = false } = {}) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) {
      if (soft) return v;
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await sleep(step);
  }
}

// A port nobody listens on right now (the kernel's pick).
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

// A fetch that goes over the unix socket at socketPath (or plain TCP when
// socketPath is null).  The URL's host is ignored by the socket, so any
// http://localhost/... works.
export function makeFetch(socketPath) {
  const dispatcher = new undici.Agent(socketPath ? { connect: { socketPath } } : {});
  const f = (url, init = {}) => undici.fetch(url, { ...init, dispatcher });
  f.close = () => dispatcher.close();
  return f;
}

// A connected SDK client on url; headers go on every request.  fetch: a
// makeFetch() for a unix socket; without it, node's own.
export async function connectClient(url, { headers = {}, name = 'vivarium-test', fetch } = {}) {
  const client = new Client({ name, version: '0.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch, requestInit: { headers } }));
  return client;
}

// The same with the 2.x client pinned to 2026-07-28 (no initialize: its
// first request is a server/discover).
export async function connect2026(url, { headers = {}, name = 'vivarium-test', fetch, capabilities = {} } = {}) {
  const client = new Client2026({ name, version: '0.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities });
  await client.connect(new Transport2026(new URL(url), { fetch, requestInit: { headers } }));
  return client;
}

// A fetch Response read whole; json is null when the body is not JSON.
export async function replyOf(res) {
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// Starts a program and waits until it says it listens.  Returns
// { proc, stderr(), baseUrl, exited (a promise of the exit code) }.
export async function startServer(bin, { env = {}, args = [], socketPath = null, timeoutMs = 10000 } = {}) {
  const proc = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((res) => proc.on('exit', (code, sig) => res(code ?? 128 + (sig === 'SIGKILL' ? 9 : 15))));
  const baseUrl = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`${bin} did not start listening:\n${err}`)), timeoutMs);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on (http:\/\/[^/\s]+)\//.exec(err);
      if (socketPath ? err.includes(`listening on unix:${socketPath}`) : m) {
        clearTimeout(timer);
        res(socketPath ? 'http://localhost' : m[1]);
      }
    });
    proc.on('exit', (code) => { clearTimeout(timer); rej(new Error(`${bin} exited ${code} before listening:\n${err}`)); });
  });
  return { proc, baseUrl, exited, stderr: () => err, stdout: () => out };
}

// Starts vivarium-agent on a fresh workspace.  transport: 'tcp' (127.0.0.1,
// a free port) or 'unix' (a socket in the temp dir, TCP off).
export async function startAgent({ transport = 'tcp', env = {}, workspace = null } = {}) {
  if (!existsSync(agentBin)) throw new Error(`${agentBin} is missing: run make first`);
  const dir = mkdtempSync(join(tmpdir(), 'vivarium-e2e-'));
  const ws = workspace || join(dir, 'ws');
  if (!workspace) mkdirSync(ws);
  const socketPath = transport === 'unix' ? join(dir, 'agent.sock') : null;
  const fullEnv = {
    VIVARIUM_WORKDIR: ws,
    VIVARIUM_HOST: '127.0.0.1',
    VIVARIUM_PORT: transport === 'unix' ? 'off' : '0',
    ...(socketPath ? { VIVARIUM_SOCKET: socketPath } : {}),
    ...env,
  };
  const srv = await startServer(agentBin, { env: fullEnv, socketPath });
  const fetch = makeFetch(socketPath);
  const mcpUrl = `${srv.baseUrl}/mcp`;
  const clients = [];

  const agent = {
    dir, workspace: ws, socketPath, baseUrl: srv.baseUrl, mcpUrl, fetch, proc: srv.proc,
    stderr: srv.stderr,
    exited: srv.exited, // a promise of the exit code
    // A connected SDK client; headers go on every request.
    async connect({ headers = {}, name = 'vivarium-e2e' } = {}) {
      const client = await connectClient(mcpUrl, { headers, name, fetch });
      clients.push(client);
      return client;
    },
    // A raw POST to /mcp: body is a string or Buffer, sent as is.
    async post(body, { headers = {}, path = '/mcp', method = 'POST' } = {}) {
      const res = await fetch(`${srv.baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: method === 'GET' || method === 'HEAD' ? undefined : body,
      });
      return replyOf(res);
    },
    async get(path, { headers = {}, method = 'GET' } = {}) {
      const res = await fetch(`${srv.baseUrl}${path}`, { method, headers });
      return { status: res.status, headers: res.headers, text: await res.text() };
    },
    alive() { return srv.proc.exitCode === null && srv.proc.signalCode === null; },
    // SIGTERM, wait, clean up; returns the exit code.
    async stop({ keep = false } = {}) {
      for (const c of clients) await c.close().catch(() => {});
      if (agent.alive()) srv.proc.kill('SIGTERM');
      const code = await Promise.race([srv.exited, new Promise((r) => setTimeout(() => r('timeout'), 15000))]);
      if (code === 'timeout') srv.proc.kill('SIGKILL');
      await fetch.close().catch(() => {});
      if (!keep) rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
  return agent;
}

// The text of a CallToolResult (all text items joined).
export function textOf(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// A tool call, its result with .text (textOf) added.  Two minutes, not
// the SDK's default of one: a call may first start a sandbox.
export async function callTool(client, name, args = {}, { timeout = 120000 } = {}) {
  const r = await client.callTool({ name, arguments: args }, undefined, { timeout });
  return { ...r, text: textOf(r) };
}

export const runPython = (client, code, args = {}, opts) =>
  callTool(client, 'run_python', { code, ...args }, opts);
