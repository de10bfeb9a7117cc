// End-to-end tests of vivarium-agent with the official MCP SDK client, on
// TCP and on a unix socket.  Run: node --test tests/e2e/ (after make).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, mkdirSync, symlinkSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { startAgent, textOf, runPython as run } from './harness.mjs';

const python = process.env.VIVARIUM_PYTHON || 'python3';
const hasMatplotlib = (() => {
  try { execFileSync(python, ['-c', 'import matplotlib'], { stdio: 'ignore' }); return true; } catch { return false; }
})();

function pngSize(b64) {
  const buf = Buffer.from(b64, 'base64');
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'image data is a PNG');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

function rssKb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

function alive(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/\) Z /.test(st); // a zombie is dead, just not reaped yet
  } catch { return false; }
}

for (const transport of ['tcp', 'unix']) {
  describe(`vivarium-agent over ${transport}`, () => {
    let agent;
    let client;

    before(async () => {
      agent = await startAgent({ transport, env: { VIVARIUM_MAX_TIMEOUT: '20', VIVARIUM_OUTPUT_LIMIT: '2000' } });
      client = await agent.connect();
    });
    after(async () => {
      const code = await agent.stop();
      assert.equal(code, 0, `agent exits 0 on SIGTERM\n${agent.stderr()}`);
    });

    test('initialize: server info, tools capability, instructions', () => {
      assert.equal(client.getServerVersion().name, 'vivarium-agent');
      assert.ok(client.getServerCapabilities().tools);
      const ins = client.getInstructions();
      for (const word of ['run_python', 'list_files', 'read_text_file', 'vivarium_charts', 'state', 'share_file', 'upload_link'])
        assert.ok(ins.includes(word), `instructions mention ${word}`);
    });

    test('tools/list: seven tools with schemas, titles, hints and output schemas', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ['job_status', 'list_files', 'read_text_file', 'run_python',
        'share_file', 'upload_link', 'workspace_link']);
      for (const t of tools) assert.ok(t.title && t.annotations, `${t.name}: title and annotations`);
      assert.equal(tools.find((t) => t.name === 'list_files').annotations.readOnlyHint, true);
      assert.equal(tools.find((t) => t.name === 'read_text_file').annotations.readOnlyHint, true);
      assert.equal(tools.find((t) => t.name === 'run_python').annotations.openWorldHint, true);
      assert.equal(tools.find((t) => t.name === 'run_python').annotations.readOnlyHint, false);
      for (const n of ['run_python', 'job_status'])
        assert.equal(tools.find((t) => t.name === n).outputSchema.type, 'object', `${n}: outputSchema`);
      assert.equal(tools.find((t) => t.name === 'run_python').inputSchema.properties.background.type, 'boolean');
      assert.deepEqual(tools.find((t) => t.name === 'share_file').inputSchema.required, ['path']);
      const rp = tools.find((t) => t.name === 'run_python');
      assert.deepEqual(rp.inputSchema.required, ['code']);
      assert.equal(rp.inputSchema.properties.timeout_seconds.type, 'integer');
      assert.equal(rp.inputSchema.properties.fresh.type, 'boolean');
      const rt = tools.find((t) => t.name === 'read_text_file');
      assert.deepEqual(rt.inputSchema.required, ['path']);
    });

    test('ping', async () => {
      assert.deepEqual(await client.ping(), {});
    });

    test('run_python: print', async () => {
      const r = await run(client, 'print("hello", 6 * 7)');
      assert.equal(r.isError, false);
      assert.match(textOf(r), /exit code: 0/);
      assert.match(textOf(r), /hello 42/);
    });

    test('run_python: an exception', async () => {
      const r = await run(client, 'x = 1\n1 / 0\n');
      assert.equal(r.isError, true);
      // The first line says it: no client shows isError to the model.
      assert.match(textOf(r), /^error: ZeroDivisionError: division by zero \(exit code 1\)\n/);
      assert.match(textOf(r), /--- stderr ---\nTraceback/);
    });

    test('run_python: a timeout kills the run and says so', async () => {
      const t0 = Date.now();
      const r = await run(client, 'import time\nprint("started", flush=True)\ntime.sleep(60)', { timeout_seconds: 1 });
      const took = Date.now() - t0;
      assert.equal(r.isError, true);
      assert.match(textOf(r), /Timed out after 1 s/);
      assert.match(textOf(r), /started/);
      assert.ok(took < 10000, `returned after ${took} ms`);
    });

    test('run_python: timeout_seconds above the limit is lowered', async () => {
      const r = await run(client, 'print("ok")', { timeout_seconds: 999 });
      assert.match(textOf(r), /timeout_seconds=999 is above/);
      assert.equal(r.isError, false);
    });

    test('run_python: children that outlive the run do not hold it', async () => {
      const code = [
        'import os, subprocess, sys',
        'p = subprocess.Popen(["sleep", "60"])',
        'open("child.pid", "w").write(str(p.pid))',
        // A daemon that leaves the group and keeps stdout open.
        'if os.fork() == 0:',
        '    os.setsid()',
        '    open("daemon.pid", "w").write(str(os.getpid()))',
        '    import time; time.sleep(60); os._exit(0)',
        'print("parent done")',
      ].join('\n');
      const t0 = Date.now();
      const r = await run(client, code, { timeout_seconds: 15 });
      const took = Date.now() - t0;
      assert.match(textOf(r), /parent done/);
      assert.ok(took < 8000, `returned after ${took} ms`);
      const child = Number(readFileSync(join(agent.workspace, 'child.pid'), 'utf8'));
      for (let i = 0; i < 40 && alive(child); i++) await new Promise((res) => setTimeout(res, 50));
      assert.equal(alive(child), false, 'the child in the run\'s process group was killed');
      const daemon = Number(readFileSync(join(agent.workspace, 'daemon.pid'), 'utf8'));
      try { process.kill(daemon, 'SIGKILL'); } catch { /* gone already */ }
    });

    test('run_python: 50 MB of output keeps its head and tail and the agent small', async () => {
      const before = rssKb(agent.proc.pid);
      const r = await run(client, 'import sys\nprint("THE START")\nfor i in range(500):\n    sys.stdout.write("x" * 99999 + "\\n")\nprint("THE END")', { timeout_seconds: 20 });
      const t = textOf(r);
      assert.equal(r.isError, false);
      assert.match(t, /--- stdout ---\nTHE START\n/);
      assert.match(t, /\[\.\.\. \d+ characters cut here, from the middle of stdout; its start is above, its end below \.\.\.\]\n/);
      assert.match(t, /THE END\n/);
      assert.ok(t.length < 10000, `result text is ${t.length} characters`);
      const grew = rssKb(agent.proc.pid) - before;
      assert.ok(grew < 64 * 1024, `agent RSS grew by ${grew} kB`);
    });

    test('run_python: a PNG comes back as image content, downscaled', { skip: !hasMatplotlib && 'matplotlib is not installed' }, async () => {
      const code = [
        'import matplotlib',
        'matplotlib.use("Agg")',
        'import matplotlib.pyplot as plt',
        'fig = plt.figure(figsize=(20, 10), dpi=100)',
        'plt.plot([1, 2, 3], [3, 1, 2])',
        'fig.savefig("chart.png")',
        'print("saved")',
      ].join('\n');
      const r = await run(client, code, { timeout_seconds: 20 });
      assert.equal(r.isError, false, textOf(r));
      const images = r.content.filter((c) => c.type === 'image');
      assert.equal(images.length, 1);
      assert.equal(images[0].mimeType, 'image/png');
      const { width, height } = pngSize(images[0].data);
      assert.ok(Math.max(width, height) <= 1280, `image is ${width}x${height}`);
      assert.match(textOf(r), /chart\.png/);
      assert.ok(!textOf(r).includes('iVBOR'), 'no base64 in text');
      assert.equal(statSync(join(agent.workspace, 'chart.png')).size > 0, true);
      // Unchanged on the next run: no image.
      const r2 = await run(client, 'print("again")');
      assert.equal(r2.content.filter((c) => c.type === 'image').length, 0);
    });

    test('list_files: recursive with sizes, runner state hidden', async () => {
      mkdirSync(join(agent.workspace, 'data', 'raw'), { recursive: true });
      writeFileSync(join(agent.workspace, 'data', 'raw', 'prices.csv'), 'a,b\n1,2\n');
      mkdirSync(join(agent.workspace, '.vivarium'), { recursive: true });
      writeFileSync(join(agent.workspace, '.vivarium', 'secret-state'), 'x');
      const r = await client.callTool({ name: 'list_files', arguments: {} });
      const t = textOf(r);
      assert.equal(r.isError, false);
      assert.match(t, /data\/raw\/prices\.csv {2}8 B/);
      assert.match(t, /data\/\n/);
      assert.ok(!t.includes('.vivarium'), t);
    });

    test('names that are not UTF-8: listed escaped and marked, a PNG of one keeps the result', async () => {
      const png = join(process.cwd(), '..', 'data', 'png', 'checker.png');
      const r = await run(client, [
        'import os, shutil',
        'os.makedirs(os.fsdecode(b"odd/d\\xff"), exist_ok=True)',
        'open(os.fsdecode(b"odd/d\\xff/x.csv"), "w").write("a")',
        `shutil.copy(${JSON.stringify(png)}, os.fsdecode(b"odd/r\\xe9sum\\xe9.png"))`,
        'print("ran")',
      ].join('\n'));
      const t = textOf(r);
      assert.equal(r.isError, false, t);
      assert.match(t, /ran/);
      assert.ok(t.includes('image: odd/r\\xe9sum\\xe9.png ('), t);
      assert.ok(t.includes('[name not UTF-8: bytes shown as \\xNN]'), t);
      assert.equal(r.content.filter((c) => c.type === 'image').length, 1);
      const l = await client.callTool({ name: 'list_files', arguments: {} });
      const lt = textOf(l);
      assert.equal(l.isError, false, lt);
      assert.ok(lt.includes('odd/d\\xff/  [name not UTF-8'), lt);
      assert.ok(lt.includes('odd/d\\xff/x.csv  1 B  [name not UTF-8'), lt);
      assert.ok(lt.includes('odd/r\\xe9sum\\xe9.png  '), lt);
      execFileSync('rm', ['-rf', join(agent.workspace, 'odd')]);
    });

    test('read_text_file: reads, truncates, refuses escapes and binaries', async () => {
      const ws = agent.workspace;
      const outside = join(agent.dir, 'outside');
      mkdirSync(outside, { recursive: true });
      writeFileSync(join(outside, 'secret.txt'), 'TOPSECRET\n');
      writeFileSync(join(ws, 'notes.txt'), 'line one\nline two\n');
      writeFileSync(join(ws, 'blob.bin'), Buffer.from([0x89, 0x50, 0x00, 0x01, 0xff]));
      symlinkSync(join(outside, 'secret.txt'), join(ws, 'link-out'));
      symlinkSync(outside, join(ws, 'dir-out'));
      const read = (args) => client.callTool({ name: 'read_text_file', arguments: args });

      let r = await read({ path: 'notes.txt' });
      assert.equal(r.isError, false);
      assert.equal(textOf(r), 'line one\nline two\n');
      r = await read({ path: 'notes.txt', max_chars: 4 });
      assert.match(textOf(r), /^line\n\[truncated: showing the first 4 characters/);

      for (const [path, why] of [
        ['../outside/secret.txt', /outside the workspace/],
        [join(outside, 'secret.txt'), /absolute path/],
        ['link-out', /symbolic link/],
        ['dir-out/secret.txt', /symbolic link/],
        ['data/../../outside/secret.txt', /outside the workspace/],
        ['blob.bin', /binary|UTF-8/],
        ['.vivarium/secret-state', /runner's private state/],
        ['nope.txt', /does not exist/],
        ['notes.txt/', /'notes\.txt' is not a directory/],
      ]) {
        r = await read({ path });
        assert.equal(r.isError, true, path);
        assert.match(textOf(r), why, path);
        assert.ok(!textOf(r).includes('TOPSECRET'), path);
      }
    });

    test('runs are serialized per workspace while other requests are served', async () => {
      const slow = 'import time\ntime.sleep(1.5)\nprint("slept")';
      const t0 = Date.now();
      const a = run(client, slow);
      const b = run(client, slow);
      // While they run: health, tools/list and list_files answer at once.
      await new Promise((r) => setTimeout(r, 300));
      const t1 = Date.now();
      const h = await agent.get('/health');
      assert.equal(h.status, 200);
      await client.listTools();
      await client.callTool({ name: 'list_files', arguments: {} });
      // A run takes 1.5 s; served "at once" means well before it ends.
      assert.ok(Date.now() - t1 < 1200, `served in ${Date.now() - t1} ms during a run`);
      const [ra, rb] = await Promise.all([a, b]);
      assert.match(textOf(ra), /slept/);
      assert.match(textOf(rb), /slept/);
      const took = Date.now() - t0;
      assert.ok(took >= 2900, `two 1.5 s runs on one workspace took ${took} ms (not serialized)`);
    });

    test('one log line per run, never the code', async () => {
      await run(client, 'print("x")  # MARKER-7f3a9 the code must not be logged');
      await new Promise((r) => setTimeout(r, 100));
      const lines = agent.stderr().split('\n').filter((l) => l.includes('run_python:'));
      assert.ok(lines.length >= 1);
      assert.ok(!agent.stderr().includes('MARKER-7f3a9'));
      assert.match(lines.at(-1), /\d+\.\d+ s, exit 0, \d+ characters of code/);
    });
  });
}

describe('connection floods', () => {
  let agent;
  before(async () => { agent = await startAgent({ transport: 'tcp' }); });
  after(async () => { assert.equal(await agent.stop(), 0); });

  test('300 silent connections: /health still answers, a run in progress is not cut', async () => {
    const client = await agent.connect();
    const { hostname, port } = new URL(agent.baseUrl);
    const held = [];
    const flood = async (n) => {
      for (let i = 0; i < n; i++) {
        const s = net.connect(Number(port), hostname);
        s.on('error', () => {});
        held.push(s);
      }
      await new Promise((r) => setTimeout(r, 1000));
    };
    try {
      const slow = run(client, 'import time\ntime.sleep(3)\nprint("survived")');
      await new Promise((r) => setTimeout(r, 300));
      await flood(300);    // past the cap of 256
      const t0 = Date.now();
      const h = await agent.get('/health');
      assert.equal(h.status, 200);
      assert.ok(Date.now() - t0 < 3000, `/health took ${Date.now() - t0} ms`);
      assert.match(textOf(await slow), /survived/);
      const r = await run(client, 'print("next")');
      assert.match(textOf(r), /next/);
    } finally {
      for (const s of held) s.destroy();
      await client.close();
    }
  });
});

describe('per-user workspaces (VIVARIUM_USER_HEADER)', () => {
  let agent;
  before(async () => { agent = await startAgent({ env: { VIVARIUM_USER_HEADER: 'X-User-ID' } }); });
  after(async () => { assert.equal(await agent.stop(), 0); });

  test('each user gets users/<id>/ and runs in parallel', async () => {
    const alice = await agent.connect({ headers: { 'X-User-ID': 'alice' } });
    const bob = await agent.connect({ headers: { 'X-User-ID': 'bob.B-2_x' } });
    await run(alice, 'open("mine.txt", "w").write("alice")');
    const lb = textOf(await bob.callTool({ name: 'list_files', arguments: {} }));
    assert.ok(!lb.includes('mine.txt'), lb);
    const la = textOf(await alice.callTool({ name: 'list_files', arguments: {} }));
    assert.match(la, /mine\.txt/);
    assert.equal(readFileSync(join(agent.workspace, 'users', 'alice', 'mine.txt'), 'utf8'), 'alice');

    const slow = 'import time\ntime.sleep(2)';
    const t0 = Date.now();
    await Promise.all([run(alice, slow), run(bob, slow)]);
    const took = Date.now() - t0;
    assert.ok(took < 3800, `two users' 2 s runs took ${took} ms (serialized would be over 4000)`);
  });

  test('one user keeps at most 8 background jobs; others still get theirs', async () => {
    const alice = await agent.connect({ headers: { 'X-User-ID': 'jobs-alice' } });
    const bob = await agent.connect({ headers: { 'X-User-ID': 'jobs-bob' } });
    const bg = (c) => run(c, 'import time\ntime.sleep(60)', { background: true });
    const ids = [];
    try {
      for (let i = 0; i < 8; i++) {
        const r = await bg(alice);
        assert.equal(r.isError, false, textOf(r));
        ids.push([alice, r.structuredContent.job_id]);
      }
      const refused = await bg(alice);
      assert.equal(refused.isError, true);
      const t = textOf(refused);
      assert.match(t, /user jobs-alice already has 8 background jobs running or waiting to be collected, the most one user may keep/);
      for (const [, id] of ids) assert.ok(t.includes(id), `${id} named in: ${t}`);
      assert.match(t, /running for \d+ s/);
      const rb = await bg(bob);
      assert.equal(rb.isError, false, textOf(rb));
      ids.push([bob, rb.structuredContent.job_id]);
    } finally {
      for (const [c, id] of ids) await c.callTool({ name: 'job_status', arguments: { job_id: id, stop: true } });
      await alice.close();
      await bob.close();
    }
  });

  test('missing or unsafe user ids get a clear 400', async () => {
    const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    let r = await agent.post(ping);
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /X-User-ID header is required/);
    for (const id of ['../etc', '.hidden', 'a b', 'x'.repeat(65), 'ü']) {
      r = await agent.post(ping, { headers: { 'X-User-ID': encodeURI(id) === id ? id : 'bad/' } });
      assert.equal(r.status, 400, id);
      assert.match(r.json.error.message, /safe user id/, id);
    }
    r = await agent.post(ping, { headers: { 'X-User-ID': 'x'.repeat(64) } });
    assert.equal(r.status, 200);
  });

  test('a user id cut by a NUL or sent twice gets a 400 that says why', async () => {
    const ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
    const { hostname, port } = new URL(agent.baseUrl);
    const raw = (lines) => new Promise((resolve, reject) => {
      const s = net.connect(Number(port), hostname);
      const got = [];
      s.on('data', (d) => got.push(d));
      s.on('error', reject);
      s.on('end', () => resolve(Buffer.concat(got).toString('latin1')));
      s.write(Buffer.from(['POST /mcp HTTP/1.1', 'Host: x', 'Connection: close',
        'Content-Type: application/json', `Content-Length: ${ping.length}`, ...lines, '', ping].join('\r\n'), 'latin1'));
    });
    for (const [lines, why] of [
      [['X-User-ID: alice\0bob'], /X-User-ID header holds a NUL byte/],
      [['X-User-ID: alice\0bob', 'Accept: application/json'], /holds a NUL byte/],
      [['X-User-ID: alice', 'x-user-id: bob'], /X-User-ID header is sent 2 times/],
    ]) {
      const t = await raw(lines);
      assert.match(t, /^HTTP\/1\.1 400 /, t);
      assert.match(t, why, t);
    }
    assert.match(await raw(['X-User-ID: alice']), /^HTTP\/1\.1 200 /);
  });
});
