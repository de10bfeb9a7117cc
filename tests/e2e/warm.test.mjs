// Warm runs through the real agent (VIVARIUM_WARM=1) and the MCP SDK client:
// the zygote starts with the agent, so the first call is warm; per-user
// workspaces stay apart when every user's runs fork from one zygote, users
// run in parallel through it, and a zygote killed between calls is replaced
// without the caller noticing.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgent, textOf, runPython as run, sleep } from './harness.mjs';

async function stdoutOf(client, code) {
  const r = await run(client, code);
  const t = textOf(r);
  assert.equal(r.isError, false, t);
  const m = /--- stdout ---\n([\s\S]*?)(?:\n--- |$)/.exec(t);
  assert.ok(m, t);
  return m[1].trim();
}

// The zygote's pid as the run sees it: its parent is a waiter, whose parent
// is the zygote.  Also says whether the run was warm at all.
const LINEAGE = `import os
w = os.getppid()
z = open('/proc/%d/stat' % w).read().rsplit(')', 1)[1].split()[1]
print(os.getpid(), w, z)`;

// Runs don't wait for a new zygote (they run cold while it imports): poll
// until a run comes from it.  Returns [pid, waiter, zygote].
async function waitWarm(agent, client, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    const l = (await stdoutOf(client, LINEAGE)).split(' ').map(Number);
    if (l[1] !== agent.proc.pid) return l;
    if (Date.now() > end) throw new Error('runs never came from the zygote');
    await new Promise((r) => setTimeout(r, 200));
  }
}

// The children of a process, from /proc.
function childrenOf(pid) {
  const out = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}

// Once the zygote has imported it forks the first spare (through a waiter):
// until then a run would go cold.  Returns the zygote's pid.
async function spareReady(agent, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    for (const z of childrenOf(agent.proc.pid)) {
      if (childrenOf(z).some((w) => childrenOf(w).length > 0)) return z;
    }
    if (Date.now() > end) throw new Error('no spare appeared');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('warm runs with per-user workspaces', () => {
  let agent;
  let alice;
  let bob;

  before(async () => {
    agent = await startAgent({
      transport: 'unix',
      env: { VIVARIUM_WARM: '1', VIVARIUM_USER_HEADER: 'X-User-ID', VIVARIUM_MAX_TIMEOUT: '30' },
    });
    alice = await agent.connect({ headers: { 'X-User-ID': 'alice' } });
    bob = await agent.connect({ headers: { 'X-User-ID': 'bob' } });
  });
  after(async () => { await agent.stop(); });

  test('the zygote starts with the agent: the first call is warm', async () => {
    const z = await spareReady(agent);
    const [p1, w1, z1] = (await stdoutOf(alice, LINEAGE)).split(' ').map(Number);
    assert.notEqual(w1, agent.proc.pid, 'the first run was cold');
    assert.equal(z1, z);
    assert.notEqual(p1, w1);
  });

  test('runs are warm: forked from the zygote, a new process each call', async () => {
    const [p1, w1, z1] = await waitWarm(agent, alice);
    const [p2, w2, z2] = (await stdoutOf(alice, LINEAGE)).split(' ').map(Number);
    assert.notEqual(w1, agent.proc.pid, 'the run was cold');
    assert.equal(z1, z2, 'one zygote serves both');
    assert.notEqual(z1, agent.proc.pid);
    assert.notEqual(p1, p2);
    assert.notEqual(w1, w2);
  });

  test('each user runs in their own workspace', async () => {
    const a = await stdoutOf(alice, "open('alice.txt', 'w').write('a')\nsecret = 42\nimport os\nprint(os.getcwd())");
    const b = await stdoutOf(bob, "import os\nprint(os.getcwd(), sorted(os.listdir('.')), 'secret' in globals())");
    assert.equal(a, join(agent.workspace, 'users', 'alice'));
    assert.equal(b, `${join(agent.workspace, 'users', 'bob')} [] False`);
    assert.ok(existsSync(join(agent.workspace, 'users', 'alice', 'alice.txt')));
    assert.ok(!existsSync(join(agent.workspace, 'users', 'bob', 'alice.txt')));
    assert.equal(await stdoutOf(alice, 'print(secret)'), '42');
  });

  test('two users in parallel through one zygote keep their cwd', async () => {
    await waitWarm(agent, bob);
    const code = "import os, time\ntime.sleep(0.5)\nprint(os.path.basename(os.getcwd()), os.environ['VIVARIUM_STATE_DIR'])";
    const started = Date.now();
    const [a, b] = await Promise.all([stdoutOf(alice, code), stdoutOf(bob, code)]);
    assert.equal(a, `alice ${join(agent.workspace, 'users', 'alice', '.vivarium')}`);
    assert.equal(b, `bob ${join(agent.workspace, 'users', 'bob', '.vivarium')}`);
    assert.ok(Date.now() - started < 5000);
  });

  test('a zygote killed between calls is replaced; the call succeeds', async () => {
    const z1 = Number((await stdoutOf(bob, LINEAGE)).split(' ')[2]);
    process.kill(z1, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await stdoutOf(bob, "print('still here')"), 'still here');
    const [, w, z2] = await waitWarm(agent, bob);
    assert.notEqual(w, agent.proc.pid);
    assert.notEqual(z2, z1);
    assert.match(agent.stderr(), /zygote \(pid \d+\) has gone/);
  });

  test('a timeout kills the run, the next call works', async () => {
    const r = await run(alice, 'import time\nprint("x", flush=True)\ntime.sleep(30)', { timeout_seconds: 1 });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^error: Timed out after 1 s/);
    assert.equal(await stdoutOf(alice, 'print(secret + 1)'), '43');
  });
});

// The environment goes to the spare in one message; one too large for it
// goes a variable at a time.  Either way the run sees it whole.
describe("a warm run's environment", () => {
  for (const [what, size] of [['in one message', 100], ['too large for one message', 40000]]) {
    test(`${what}: every variable arrives whole`, async () => {
      const big = 'v='.repeat(size / 2);
      const agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1', VIVARIUM_T_BIG: big, VIVARIUM_T_EMPTY: '' } });
      try {
        const client = await agent.connect();
        await waitWarm(agent, client);
        const out = await stdoutOf(client, `import os, hashlib
e = os.environ
print(len(e['VIVARIUM_T_BIG']), hashlib.sha256(e['VIVARIUM_T_BIG'].encode()).hexdigest()[:16],
      repr(e['VIVARIUM_T_EMPTY']), e['VIVARIUM_RUN_DIR'] != '')`);
        assert.equal(out, `${big.length} ${createHash('sha256').update(big).digest('hex').slice(0, 16)} '' True`);
      } finally {
        await agent.stop();
      }
    });
  }
});

// A spare rehearses a run before it waits (vivarium/_zygote.py, _rehearse):
// nothing of that rehearsal reaches the run it then serves.
describe('the rehearsal leaves nothing', () => {
  test('no name, path, file, __main__ or temporary directory of it', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'vivarium-tmpdir-'));
    const agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1', TMPDIR: tmp } });
    try {
      const client = await agent.connect();
      await waitWarm(agent, client);
      await spareReady(agent);
      const r = await run(client, `import sys, os, glob, tempfile, __main__
print(sorted(k for k in globals() if not k.startswith('__')))
print([p for p in sys.path if 'rehearsal' in p], glob.glob(os.path.join(${JSON.stringify(tmp)}, '*rehearsal*')))
print(tempfile.gettempdir(), __main__.__dict__ is globals(), sys.argv)`);
      const t = textOf(r);
      assert.equal(r.isError, false, t);
      const out = /--- stdout ---\n([\s\S]*?)\n--- /.exec(t)[1].split('\n');
      // w and z are waitWarm's (LINEAGE); none of the rehearsal's x, pd, df.
      assert.equal(out[0], "['glob', 'os', 'sys', 'tempfile', 'w', 'z']");
      assert.equal(out[1], '[] []');
      assert.equal(out[2], `${tmp} True ['<run_python>']`);
      assert.match(t, /namespace: restored 3 name\(s\)\nvars: w \d+  z /);
    } finally {
      await agent.stop();
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});

// A spare restores the namespace of the last run's workspace while it
// waits (_runner.prepare).  A value whose unpickling reads the run's own
// variable VIVARIUM_RUN_DIR shows where it was restored: in the spare,
// before its run, the variable is not there (None); restored by the run,
// it is.
const PROBE = `import os
class Probe:
    def __reduce__(self):
        return (os.getenv, ('VIVARIUM_RUN_DIR',))
e = Probe()
print('stored')`;

describe('a spare restores the namespace ahead', () => {
  // Restored in the spare the probe is None; off, the run restores it.
  for (const [what, env, code, want] of [
    ['the next run in the same workspace starts with it', {}, 'print(e is None)', 'True'],
    ['off with VIVARIUM_WARM_PRERESTORE=0: the run restores it', { VIVARIUM_WARM_PRERESTORE: '0' },
      'print(e is None, isinstance(e, str))', 'False True'],
  ]) {
    test(what, async () => {
      const agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1', ...env } });
      try {
        const client = await agent.connect();
        await waitWarm(agent, client);
        await stdoutOf(client, PROBE);
        assert.equal(await stdoutOf(client, code), want);
      } finally {
        await agent.stop();
      }
    });
  }

  test("another user's spare: each run has its own namespace", async () => {
    const agent = await startAgent({
      transport: 'unix', env: { VIVARIUM_WARM: '1', VIVARIUM_USER_HEADER: 'X-User-ID' },
    });
    try {
      const alice = await agent.connect({ headers: { 'X-User-ID': 'alice' } });
      const bob = await agent.connect({ headers: { 'X-User-ID': 'bob' } });
      await waitWarm(agent, alice);
      // Calls spaced as a model's are: the spare for the next run is
      // asked for 10 ms after a run ends, told that run's workspace (a
      // run that comes sooner makes its own, told its own workspace).
      const gap = () => sleep(300);
      await stdoutOf(alice, `${PROBE}\nwho = 'alice'`);
      await gap();
      await stdoutOf(bob, `${PROBE}\nwho = 'bob'`);
      await gap();
      // Bob's last: alice's spare was told bob's workspace, so alice's
      // run restores her own; then bob's spare was told alice's.  (A
      // restored probe is stored again as what it became: a string.)
      assert.equal(await stdoutOf(alice, 'print(who, e is None)'), 'alice False');
      await gap();
      assert.equal(await stdoutOf(bob, 'print(who, e is None)'), 'bob False');
      await gap();
      // Bob twice in a row: the second is restored ahead.
      await stdoutOf(bob, PROBE);
      await gap();
      assert.equal(await stdoutOf(bob, 'print(who, e is None)'), 'bob True');
    } finally {
      await agent.stop();
    }
  });

  test('the first call after a start: the shared workspace is restored ahead', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'vivarium-ws-'));
    try {
      let agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1' }, workspace: ws });
      try {
        await stdoutOf(await agent.connect(), `${PROBE}\nx = 7`);
      } finally {
        await agent.stop();
      }
      agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '1' }, workspace: ws });
      try {
        const client = await agent.connect();
        await spareReady(agent);
        const out = (await stdoutOf(client, `${LINEAGE}\nprint(x, e is None)`)).split('\n');
        assert.notEqual(Number(out[0].split(' ')[1]), agent.proc.pid, 'the first run was cold');
        assert.equal(out[1], '7 True');
      } finally {
        await agent.stop();
      }
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
