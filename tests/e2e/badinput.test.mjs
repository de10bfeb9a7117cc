// Bad input over raw HTTP: each gets a clear error and the agent keeps
// serving the next request.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, startServer, agentBin, textOf } from './harness.mjs';

const req = (method, params, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) });
const call = (name, args) => req('tools/call', { name, arguments: args });

for (const transport of ['tcp', 'unix']) {
  describe(`bad input over ${transport}`, () => {
    let agent;
    before(async () => {
      agent = await startAgent({ transport, env: { VIVARIUM_ALLOWED_ORIGINS: 'https://chat.example.org' } });
    });
    after(async () => { assert.equal(await agent.stop(), 0); });

    // After every case: still serving.
    async function stillServing() {
      assert.ok(agent.alive(), 'agent still running');
      const r = await agent.post(req('ping'));
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, { jsonrpc: '2.0', id: 1, result: {} });
    }

    const cases = [
      ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700, /Parse error/],
      ['trailing garbage', '{"jsonrpc":"2.0","id":1,"method":"ping"} x', 400, -32700, /Parse error/],
      ['empty body', '', 400, -32700, /Parse error/],
      ['a JSON string', '"ping"', 400, -32600, /JSON object/],
      ['no jsonrpc member', '{"id":1,"method":"ping"}', 400, -32600, /jsonrpc/],
      ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600, /jsonrpc/],
      ['method not a string', '{"jsonrpc":"2.0","id":1,"method":42}', 400, -32600, /method/],
      ['id an object', '{"jsonrpc":"2.0","id":{},"method":"ping"}', 400, -32600, /id/],
      ['empty batch', '[]', 400, -32600, /empty batch/],
      ['unknown method', req('tools/destroy'), 200, -32601, /tools\/destroy/],
      ['params not an object', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"run_python"}', 200, -32602, /params/],
      ['unknown tool', call('rm_rf', {}), 200, -32602, /Unknown tool 'rm_rf'/],
      ['missing code', call('run_python', {}), 200, 'isError', /needs 'code'/],
      ['code not a string', call('run_python', { code: ['print(1)'] }), 200, 'isError', /'code' must be a string/],
      ['timeout a string', call('run_python', { code: 'pass', timeout_seconds: 'soon' }), 200, 'isError', /timeout_seconds must be a number/],
      ['negative timeout', call('run_python', { code: 'pass', timeout_seconds: -3 }), 200, 'isError', /timeout_seconds must be from 1/],
      ['fresh a string', call('run_python', { code: 'pass', fresh: 'yes' }), 200, 'isError', /'fresh' must be true or false/],
      ['unknown argument', call('run_python', { code: 'pass', shell: true }), 200, 'isError', /no argument 'shell'/],
      ['missing path', call('read_text_file', {}), 200, 'isError', /needs 'path'/],
      ['path a number', call('read_text_file', { path: 7 }), 200, 'isError', /'path' must be a string/],
      ['max_chars too big', call('read_text_file', { path: 'a', max_chars: 1e12 }), 200, 'isError', /max_chars/],
      ['NUL escape in code', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)\\u0000"}}}', 400, -32700, /NUL|\\u0000|Parse error/],
      ['lone surrogate in code', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"\\ud800"}}}', 400, -32700, /Parse error/],
    ];

    // 'isError': refused arguments are a tool result the model reads
    // (SEP-1303), not a protocol error; an unknown tool still is one.
    for (const [name, body, status, code, msg] of cases) {
      test(name, async () => {
        const r = await agent.post(body);
        assert.equal(r.status, status, r.text);
        if (code === 'isError') {
          assert.equal(r.json?.error, undefined, r.text);
          assert.equal(r.json.result.isError, true, r.text);
          assert.match(r.json.result.content[0].text, msg);
        } else {
          assert.equal(r.json?.error?.code, code, r.text);
          assert.match(r.json.error.message, msg);
        }
        await stillServing();
      });
    }

    test('invalid UTF-8 in code', async () => {
      const body = Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(\''),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('\')"}}}'),
      ]);
      const r = await agent.post(body);
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, -32700);
      assert.match(r.json.error.message, /UTF-8/i);
      await stillServing();
    });

    test('oversized body: 413 with a clear message', async () => {
      const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_python', arguments: { code: `x = "${'a'.repeat(9 * 1024 * 1024)}"` } } });
      const r = await agent.post(big);
      assert.equal(r.status, 413);
      assert.match(r.text, /too large.*limit is 8388608 bytes/);
      await stillServing();
    });

    test('oversized chunked body: 413', async () => {
      const chunks = (async function* () { for (let i = 0; i < 10; i++) yield Buffer.alloc(1024 * 1024, 0x61); })();
      const res = await agent.fetch(`${agent.baseUrl}/mcp`, { method: 'POST', body: chunks, duplex: 'half', headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 413);
      assert.match(await res.text(), /too large/);
      await stillServing();
    });

    test('Origin: foreign refused with 403, allowed and loopback accepted', async () => {
      let r = await agent.post(req('ping'), { headers: { origin: 'http://evil.example.com', host: 'evil.example.com' } });
      assert.equal(r.status, 403);
      assert.match(r.json.error.message, /Origin is not allowed/);
      r = await agent.post(req('ping'), { headers: { origin: 'https://chat.example.org' } });
      assert.equal(r.status, 200);
      r = await agent.post(req('ping'), { headers: { origin: 'http://localhost:3080', host: 'localhost:8000' } });
      assert.equal(r.status, 200);
      // Any Host is fine without an Origin.
      r = await agent.post(req('ping'), { headers: { host: 'vivarium-alice:8000' } });
      assert.equal(r.status, 200);
      await stillServing();
    });

    test('MCP-Protocol-Version: supported ones accepted, others 400', async () => {
      for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
        const r = await agent.post(req('ping'), { headers: { 'mcp-protocol-version': v } });
        assert.equal(r.status, 200, v);
      }
      const r = await agent.post(req('ping'), { headers: { 'mcp-protocol-version': '2024-01-01' } });
      assert.equal(r.status, 400);
      assert.match(r.json.error.message, /MCP-Protocol-Version/);
      await stillServing();
    });

    test('initialize negotiates each version', async () => {
      for (const v of ['2025-03-26', '2025-06-18', '2025-11-25', '1999-12-31']) {
        const r = await agent.post(req('initialize', { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } }));
        assert.equal(r.status, 200);
        assert.equal(r.json.result.protocolVersion, v === '1999-12-31' ? '2025-11-25' : v);
      }
    });

    test('notifications get 202 with no body', async () => {
      const r = await agent.post('{"jsonrpc":"2.0","method":"notifications/initialized"}');
      assert.equal(r.status, 202);
      assert.equal(r.text, '');
    });

    test('GET and DELETE on /mcp: 405; /health; unknown path 404', async () => {
      let r = await agent.get('/mcp', { headers: { accept: 'text/event-stream' } });
      assert.equal(r.status, 405);
      assert.equal(r.headers.get('allow'), 'POST');
      r = await agent.get('/mcp', { method: 'DELETE', headers: { 'mcp-session-id': 'abc' } });
      assert.equal(r.status, 405);
      r = await agent.get('/health');
      assert.equal(r.status, 200);
      r = await agent.get('/nope');
      assert.equal(r.status, 404);
      await stillServing();
    });
  });
}

describe('startup', () => {
  test('bad values stop startup, all named at once', () => {
    let out = '';
    let status = 0;
    try {
      execFileSync(agentBin, ['-n'], {
        env: { ...process.env, VIVARIUM_WORKDIR: '/tmp', VIVARIUM_PORT: 'eighty', VIVARIUM_MAX_IMAGES: '-1', VIVARIUM_OUTPUT_LIMIT: '1e9' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) { status = e.status; out = e.stderr.toString(); }
    assert.equal(status, 1);
    for (const v of ['VIVARIUM_PORT', 'VIVARIUM_MAX_IMAGES', 'VIVARIUM_OUTPUT_LIMIT']) assert.match(out, new RegExp(v));
  });

  test('-n checks a good configuration; --help describes the variables', () => {
    const out = execFileSync(agentBin, ['-n'], { env: { ...process.env, VIVARIUM_WORKDIR: '/tmp', VIVARIUM_PORT: '0' } }).toString();
    assert.match(out, /configuration OK/);
    const help = execFileSync(agentBin, ['--help']).toString();
    for (const v of ['VIVARIUM_WORKDIR', 'VIVARIUM_SOCKET', 'VIVARIUM_USER_HEADER', 'VIVARIUM_ALLOWED_ORIGINS']) assert.match(help, new RegExp(v));
  });

  test('unix socket: mode 0600, stale socket replaced, live one refused, removed on exit', async () => {
    const first = await startAgent({ transport: 'unix' });
    const sock = first.socketPath;
    assert.equal(statSync(sock).mode & 0o777, 0o600);
    // A second agent on the same live socket must refuse.
    let failed = false;
    try {
      await startServer(agentBin, { env: { VIVARIUM_WORKDIR: first.workspace, VIVARIUM_PORT: 'off', VIVARIUM_SOCKET: sock }, socketPath: sock, timeoutMs: 5000 });
    } catch (e) { failed = true; assert.match(e.message, /another process is listening/); }
    assert.ok(failed);
    // SIGKILL leaves a stale socket; the next agent replaces it.
    first.proc.kill('SIGKILL');
    await new Promise((r) => first.proc.on('exit', r));
    assert.ok(existsSync(sock));
    const second = await startServer(agentBin, { env: { VIVARIUM_WORKDIR: first.workspace, VIVARIUM_PORT: 'off', VIVARIUM_SOCKET: sock, VIVARIUM_SOCKET_MODE: '0660' }, socketPath: sock });
    assert.equal(statSync(sock).mode & 0o777, 0o660, 'VIVARIUM_SOCKET_MODE applies');
    second.proc.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    assert.ok(!existsSync(sock), 'socket removed on exit');
    await first.stop();
  });

  test('SIGTERM lets a run in progress finish, then exits 0', async () => {
    const agent = await startAgent({ transport: 'unix' });
    const client = await agent.connect();
    const call = client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(1)\nprint("finished")' } });
    await new Promise((r) => setTimeout(r, 400));
    agent.proc.kill('SIGTERM');
    const r = await call;
    assert.match(textOf(r), /finished/);
    assert.equal(await agent.exited, 0);
    await agent.stop();
    assert.match(agent.stderr(), /finishing requests in progress/);
    assert.ok(!existsSync(agent.socketPath));
  });
});
