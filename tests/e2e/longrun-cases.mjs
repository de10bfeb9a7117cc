// longrun-cases.mjs: long runs as a client sees them -- stop, progress,
// background jobs -- driven by the official MCP SDK client.  The same cases
// run against the agent directly (tests/e2e/longrun.test.mjs) and through
// the supervisor with real Podman (tests/supervisor/longrun.test.mjs).
//
//   defineLongRunTests(test, {
//     connect,   // async () => a connected SDK Client (new connection each time)
//     post,      // async (message object, { signal }) => { status, text, json }:
//                // one raw POST on a connection of its own
//     label,     // prefix for the test names
//   });
import assert from 'node:assert/strict';
import { sleep, textOf } from './harness.mjs';

// A child process's pid is written to child.pid; is it gone (or a zombie)?
const CHILD_GONE = `import os
pid = int(open('child.pid').read())
try:
    st = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[0]
except FileNotFoundError:
    st = 'gone'
print('CHILD', 'DEAD' if st in ('gone', 'Z', 'X') else 'ALIVE')`;

export function defineLongRunTests(test, { connect, post, label }) {
  // A client with the tool list read, so the SDK checks every
  // structuredContent against the tool's outputSchema.
  async function client() {
    const c = await connect();
    await c.listTools();
    return c;
  }

  test(`${label}: stopping a long run via AbortSignal kills it at once; the next call answers with the namespace intact`, async () => {
    const c = await client();
    let r = await c.callTool({ name: 'run_python', arguments: { code: 'kept = 41\nprint("set")', fresh: true } });
    assert.match(textOf(r), /set/);
    const ac = new AbortController();
    const t0 = Date.now();
    const long = c.callTool({
      name: 'run_python',
      arguments: {
        code: `import subprocess, time
p = subprocess.Popen(['sleep', '300'])
open('child.pid', 'w').write(str(p.pid))
kept = 'clobbered'
lost = 1
print('started', flush=True)
time.sleep(30)`,
      },
    }, undefined, { signal: ac.signal, timeout: 120000 });
    setTimeout(() => ac.abort(), 2000);
    await assert.rejects(long, /abort|cancel/i);
    const stoppedAt = Date.now();
    assert.ok(stoppedAt - t0 < 3000, `the call ended ${stoppedAt - t0} ms in`);
    r = await c.callTool({ name: 'run_python', arguments: { code: `print('kept', kept, 'lost' in dir())\n${CHILD_GONE}` } });
    const waited = Date.now() - stoppedAt;
    assert.ok(waited < 2500, `the next call took ${waited} ms: it waited for the stopped run`);
    assert.match(textOf(r), /kept 41 False/);
    assert.match(textOf(r), /CHILD DEAD/, 'the run\'s whole process group is killed');
    assert.equal(r.structuredContent.exit_code, 0);
    await c.close();
  });

  test(`${label}: a client that asks for progress gets notifications while a 5 s run goes on, then the result`, async () => {
    const c = await client();
    const seen = [];
    const r = await c.callTool({
      name: 'run_python',
      arguments: { code: 'import time\nfor i in range(5):\n    print("step", i, flush=True)\n    time.sleep(1)\nprint("end")' },
    }, undefined, { onprogress: (p) => seen.push(p), timeout: 60000 });
    assert.match(textOf(r), /step 4\nend/);
    assert.equal(r.structuredContent.exit_code, 0);
    assert.ok(seen.length >= 2, `${seen.length} progress notification(s)`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress goes up');
    assert.ok(seen.some((p) => /^\d+ s: step \d/.test(p.message)), `messages: ${seen.map((p) => p.message).join(' | ')}`);
    // Without a token nothing streams: the same call answers plain JSON.
    const raw = await post({ jsonrpc: '2.0', id: 900, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'print(1)' } } });
    assert.equal(raw.status, 200);
    assert.equal(raw.json.id, 900);
    await c.close();
  });

  test(`${label}: a background job started on one connection, polled on a second and collected on a third`, async () => {
    let c = await client();
    let r = await c.callTool({
      name: 'run_python',
      arguments: { code: 'import time\nprint("working", flush=True)\ntime.sleep(4)\nbg_result = 6 * 7\nopen("bg.txt", "w").write("x")\nprint("bg done")', background: true },
    });
    assert.equal(r.isError, false);
    const id = r.structuredContent.job_id;
    assert.match(id, /^[0-9a-f]{24}$/);
    assert.equal(r.structuredContent.state, 'running');
    assert.ok(textOf(r).includes(id), 'the id is in the text too');
    await c.close();

    c = await client();
    await sleep(1000);
    r = await c.callTool({ name: 'job_status', arguments: { job_id: id } });
    assert.equal(r.structuredContent.state, 'running');
    assert.match(textOf(r), /still running/);
    assert.match(textOf(r), /working/, 'output so far');
    await c.close();

    c = await client();
    r = await c.callTool({ name: 'job_status', arguments: { job_id: id, wait_seconds: 30 } });
    assert.equal(r.structuredContent.state, 'done');
    assert.equal(r.structuredContent.exit_code, 0);
    assert.equal(r.structuredContent.job_id, id);
    assert.deepEqual(r.structuredContent.files_written, ['bg.txt']);
    assert.match(textOf(r), /exit code: 0[\s\S]*bg done[\s\S]*--- state ---/);
    r = await c.callTool({ name: 'run_python', arguments: { code: 'print("got", bg_result)' } });
    assert.match(textOf(r), /got 42/);
    // Collected: the id is gone now.
    r = await c.callTool({ name: 'job_status', arguments: { job_id: id } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /no background job/);
    await c.close();
  });

  test(`${label}: a job that times out, one that is stopped, and job_status with a bad id`, async () => {
    const c = await client();
    let r = await c.callTool({ name: 'run_python', arguments: { code: 'import time\nslow = 1\ntime.sleep(60)', background: true, timeout_seconds: 2 } });
    const slow = r.structuredContent.job_id;
    r = await c.callTool({ name: 'job_status', arguments: { job_id: slow, wait_seconds: 20 } });
    assert.equal(r.structuredContent.state, 'done');
    assert.equal(r.structuredContent.timed_out, true);
    assert.equal(r.structuredContent.exit_code, null);
    assert.equal(r.isError, true);
    assert.match(textOf(r), /Timed out after 2 s/);

    r = await c.callTool({ name: 'run_python', arguments: { code: 'import time\nstopped_var = 1\ntime.sleep(60)', background: true } });
    const stopme = r.structuredContent.job_id;
    await sleep(500);
    const t0 = Date.now();
    r = await c.callTool({ name: 'job_status', arguments: { job_id: stopme, stop: true } });
    assert.ok(Date.now() - t0 < 3000);
    assert.equal(r.structuredContent.state, 'done');
    assert.equal(r.structuredContent.cancelled, true);
    assert.match(textOf(r), /Stopped after/);
    r = await c.callTool({ name: 'run_python', arguments: { code: "print('slow' in dir(), 'stopped_var' in dir())" } });
    assert.match(textOf(r), /False False/);

    r = await c.callTool({ name: 'job_status', arguments: { job_id: 'not-a-job' } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /There is no background job 'not-a-job'/);
    // Bad arguments are results the model can read, not protocol errors.
    r = await c.callTool({ name: 'job_status', arguments: {} });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /needs 'job_id'/);
    r = await c.callTool({ name: 'run_python', arguments: { code: 'print(1)', background: 'yes' } });
    assert.equal(r.isError, true);
    await assert.rejects(c.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool/);
    await c.close();
  });

  test(`${label}: a cancel that races the run's normal end leaves everything usable`, async () => {
    const c = await client();
    for (const ms of [700, 900, 1000, 1100]) {
      const ac = new AbortController();
      const p = c.callTool({ name: 'run_python', arguments: { code: `import time\ntime.sleep(0.9)\nraced_${ms} = 1\nprint("finished")` } },
        undefined, { signal: ac.signal });
      setTimeout(() => ac.abort(), ms);
      // Either outcome is fine: an abort, or the result if it came first.
      await p.then((r) => assert.match(textOf(r), /finished/), (e) => assert.match(String(e), /abort|cancel/i));
    }
    const r = await c.callTool({ name: 'run_python', arguments: { code: 'print("alive", sorted(k for k in dir() if k.startswith("raced_")))' } });
    assert.match(textOf(r), /alive \[/);
    assert.equal(r.structuredContent.exit_code, 0);
    await c.close();
  });

  test(`${label}: a client that drops its connection mid-call stops the run (plain JSON and SSE answers)`, async () => {
    for (const sse of [false, true]) {
      const ac = new AbortController();
      const params = { name: 'run_python', arguments: { code: `import subprocess, time
p = subprocess.Popen(['sleep', '300'])
open('child.pid', 'w').write(str(p.pid))
dropped = 1
time.sleep(30)` } };
      if (sse) params._meta = { progressToken: 'drop' };
      const call = post({ jsonrpc: '2.0', id: 77, method: 'tools/call', params }, { signal: ac.signal });
      await sleep(1500);
      ac.abort();
      await assert.rejects(call, /abort/i);
      const t0 = Date.now();
      const c = await client();
      const r = await c.callTool({ name: 'run_python', arguments: { code: `print('dropped' in dir())\n${CHILD_GONE}` } });
      assert.ok(Date.now() - t0 < 2500, `sse=${sse}: the next call took ${Date.now() - t0} ms`);
      assert.match(textOf(r), /False\nCHILD DEAD/, `sse=${sse}`);
      await c.close();
    }
  });

  test(`${label}: two cancels for one request, and a cancel for a request that is not running`, async () => {
    const id = 4242;
    const t0 = Date.now();
    const call = post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntwice = 1\ntime.sleep(30)' } } });
    await sleep(1500);
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } };
    const cancelledAt = Date.now();
    const [a, b] = await Promise.all([post(cancel), post(cancel)]);
    assert.equal(a.status, 202);
    assert.equal(b.status, 202);
    const r = await call;
    const took = Date.now() - cancelledAt;
    // No result for a cancelled request: 202 and no body.
    assert.equal(r.status, 202, `status ${r.status}: ${r.text.slice(0, 200)}`);
    assert.equal(r.text, '');
    assert.ok(Date.now() - t0 < 5000);
    // Usually some 10 ms, the kill and two round trips; the bound leaves
    // room for a machine busy with other suites.
    assert.ok(took < 750, `the call ended ${took} ms after the cancels were sent`);
    console.log(`${label}: the cancelled call ended ${took} ms after the cancels were sent`);
    // Once more for the finished request, one for an id never seen, one
    // with a string id: all ignored.
    for (const rid of [id, 99999, 'no-such']) {
      const x = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: rid } });
      assert.equal(x.status, 202);
    }
    const c = await client();
    const res = await c.callTool({ name: 'run_python', arguments: { code: "print('twice' in dir())" } });
    assert.match(textOf(res), /False/);
    await c.close();
  });
}
