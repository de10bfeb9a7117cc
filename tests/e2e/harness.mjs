// harness.mjs: start a real vivarium-agent with a temporary workspace and
// talk to it with the official MCP TypeScript SDK client (the one LibreChat
// uses), over TCP or over a unix socket.
//
//   import { startAgent } from './harness.mjs';
//   const agent = await startAgent({ transport: 'unix', env: { VIVARIUM_MAX_TIMEOUT: '5' } });
//   const client = await agent.connect();            // a connected SDK Client
//   const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(1)' } });
//   const raw = await agent.post('{"jsonrpc":"2.0","id":1,"method":"ping"}');
//   await agent.stop();                              // SIGTERM; returns the exit code
//
// The binary is $VIVARIUM_AGENT_BIN, or bin/vivarium-agent of this checkout.
// Other engineers: startServer() is the generic part (any program that logs
// "listening on http://HOST:PORT/" or listens on a socket path you give it).

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const agentBin = process.env.VIVARIUM_AGENT_BIN || join(repoRoot, 'bin', 'vivarium-agent');

// A fetch that goes over the unix socket at socketPath (or plain TCP when
// socketPath is null).  The URL's host is ignored by the socket, so any
// http://localhost/... works.
export function makeFetch(socketPath) {
  const dispatcher = new Agent(socketPath ? { connect: { socketPath } } : {});
  const f = (url, init = {}) => undiciFetch(url, { ...init, dispatcher });
  f.close = () => dispatcher.close();
  return f;
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
      const client = new Client({ name, version: '0.0.0' });
      const tr = new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch, requestInit: { headers } });
      await client.connect(tr);
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
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      return { status: res.status, headers: res.headers, text, json };
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
