// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against the standalone agent, offline: the scenarios that apply to a
// server whose tools are its own (the rest need the suite's fixture tools,
// prompts and resources).  2025 eras: initialize, sessions, ping,
// tools/list, DNS rebinding.  2026-07-28: the stateless rules, the header
// checks and the caching hints.  Known misses are in conformance-baseline.yml,
// each with its reason; a check that starts passing there fails the run too.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgent } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('@modelcontextprotocol/conformance/package.json')), 'dist', 'index.js');
const node20 = Number(process.versions.node.split('.')[0]) < 22;

const scenarios = [
  'server-initialize', 'server-session-lifecycle', 'ping', 'tools-list', 'dns-rebinding-protection',
  'server-stateless', 'http-header-validation', 'caching',
];

function conformance(url, scenario) {
  const args = [...(node20 ? ['--import', join(here, 'conformance-node20.mjs')] : []), cli, 'server',
    '--url', url, '--scenario', scenario, '--expected-failures', join(here, 'conformance-baseline.yml')];
  return new Promise((res) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { out += d; });
    p.on('exit', (code) => res({ code, out: out.replace(/\x1b\[[0-9;]*m/g, '') }));
  });
}

test('official MCP conformance scenarios against the standalone agent', async () => {
  // The suite checks Host/Origin on "localhost"; an agent on 127.0.0.1
  // answers to that name too.
  const agent = await startAgent();
  try {
    const url = agent.mcpUrl.replace('127.0.0.1', 'localhost');
    for (const s of scenarios) {
      const r = await conformance(url, s);
      const m = /Passed: (\d+)\/(\d+)/.exec(r.out);
      assert.ok(m, `${s}: no result\n${r.out.slice(-3000)}`);
      assert.equal(r.code, 0, `${s}: ${m[0]}\n${r.out.slice(-3000)}`);
      console.log(`conformance ${s}: ${m[0]}`);
    }
  } finally {
    await agent.stop();
  }
});
