// VIVARIUM_SWEEP through the real agent and the MCP SDK client.  kill(-1)
// is only safe where the agent is alone, so each agent here runs in a PID
// namespace of its own (unshare --pid --fork --mount-proc), under catatonit
// as its init (as in the sandbox, podman run --init), as an unprivileged
// user (setpriv), since the agent refuses to sweep as root.  Started as
// PID 1 itself (a Pod has no --init), it puts an init of its own in front.
// Runs leave setsid'd sleepers behind; they must be gone after the run, the
// model is told, and the next run (warm again later) works.  Needs root.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, chownSync, chmodSync, rmSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startServer, agentBin, agentCopies, textOf, connectClient, runPython as run } from './harness.mjs';

const NOBODY = 65534;
const CATATONIT = ['/usr/bin/catatonit', '/usr/libexec/podman/catatonit']
  .find((p) => { try { readFileSync(p); return true; } catch { return false; } });
const isRoot = process.getuid() === 0;
const skip = !isRoot ? 'needs root (a PID namespace)' : !CATATONIT ? 'needs catatonit' : false;

// Starts the agent as nobody in a new PID namespace, catatonit as PID 1
// (or, with asInit, the agent itself as PID 1).
async function startIsolated({ env = {}, asInit = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'vivarium-sweep-'));
  chmodSync(dir, 0o755);
  const ws = join(dir, 'ws');
  mkdirSync(ws);
  chownSync(ws, NOBODY, NOBODY);
  // nobody may not be able to reach the checkout.
  const { agent: bin, python: pythonpath } = agentCopies(dir);
  const priv = ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups',
    '--inh-caps=-all', bin];
  // No PID cgroup here: RLIMIT_NPROC bounds a bomb the sweep would miss.
  const lim = ['prlimit', '--nproc=300:300', '--'];
  const args = ['--pid', '--fork', '--mount-proc', '--kill-child',
    ...(asInit ? priv : [CATATONIT, '--', ...lim, ...priv])];
  const srv = await startServer('unshare', {
    args,
    env: {
      VIVARIUM_WORKDIR: ws, VIVARIUM_HOST: '127.0.0.1', VIVARIUM_PORT: '0',
      VIVARIUM_SWEEP: '1', VIVARIUM_MAX_TIMEOUT: '30', TMPDIR: '/tmp',
      VIVARIUM_PYTHONPATH: pythonpath, ...env,
    },
  }).catch((e) => { rmSync(dir, { recursive: true, force: true }); throw e; });
  const clients = [];
  return {
    srv, ws,
    async connect(headers = {}) {
      const c = await connectClient(`${srv.baseUrl}/mcp`, { headers, name: 'vivarium-sweep' });
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) await c.close().catch(() => {});
      // unshare --fork ignores SIGTERM; SIGKILL takes catatonit with it
      // (--kill-child) and so the whole namespace.
      srv.proc.kill('SIGKILL');
      await Promise.race([srv.exited, new Promise((r) => setTimeout(r, 10000))]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Leaves `n` setsid'd sleepers behind (stdio closed, so the run ends at
// once) and records their pids in sleepers.txt.
const LEAVE = (n) => `import os, time
pids = []
for i in range(${n}):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.write(w, b'%d\\n' % os.getpid())
            os.closerange(0, 1024)
            time.sleep(600)
        os._exit(0)
    os.close(w)
    pids.append(int(os.read(r, 32)))
    os.close(r)
    os.waitpid(pid, 0)
open('sleepers.txt', 'w').write(' '.join(map(str, pids)))
print('left', len(pids))`;

// Which recorded sleepers still exist (zombies count as gone).
const ALIVE = `import os
alive = []
for p in open('sleepers.txt').read().split():
    try:
        st = open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0]
        if st != 'Z':
            alive.append(p)
    except FileNotFoundError:
        pass
parent = open('/proc/%d/comm' % os.getppid()).read().strip()
print('alive', len(alive), 'parent', parent)`;

const stdoutOf = (r) => (/--- stdout ---\n([\s\S]*?)(?:\n--- |\n?$)/.exec(textOf(r)) || [])[1]?.trim();

describe('sweep', { skip }, () => {
  let agent, client;
  before(async () => {
    agent = await startIsolated();
    client = await agent.connect();
  });
  after(async () => { await agent?.stop(); });

  test('setsid sleepers left by a run are killed after it, and the model is told', async () => {
    const r = await run(client, LEAVE(5));
    const t = textOf(r);
    assert.equal(r.isError, false, t);
    assert.match(t, /left 5/);
    assert.match(t, /note: .*5 stray background processes left running in the sandbox were stopped after the run/, t);
    assert.match(agent.srv.stderr(), /sweep: killed 5 stray process\(es\)/);
    const a = await run(client, ALIVE);
    assert.match(stdoutOf(a), /^alive 0 /, textOf(a));
    assert.doesNotMatch(textOf(a), /stray/, 'a clean run gets no sweep note');
  });

  test('runs come warm again after the sweep killed the zygote, without a failure', async () => {
    const end = Date.now() + 30000;
    let warm = false;
    while (!warm && Date.now() < end) {
      // Cold runs are the agent's children; warm ones a waiter's.
      const out = stdoutOf(await run(client, ALIVE));
      warm = !/parent vivarium-agent/.test(out);
      if (!warm) await new Promise((res) => setTimeout(res, 200));
    }
    assert.ok(warm, 'runs never came from a new zygote');
    assert.doesNotMatch(agent.srv.stderr(), /warm: /, agent.srv.stderr());
    assert.doesNotMatch(agent.srv.stderr(), /spawn failed|could not run/);
  });

  test('an escaped fork bomb is stopped and the next call answers', async () => {
    const r = await run(client, `import os, time
if os.fork() == 0:
    os.setsid()
    os.closerange(0, 1024)
    while True:
        try: os.fork()
        except OSError: time.sleep(0.01)
print('parent done')`, { timeout_seconds: 5 });
    assert.match(textOf(r), /stray background process/, textOf(r));
    const n = await run(client, "print('after', 6 * 7)");
    assert.match(textOf(n), /after 42/);
    const p = await run(client, `import os
print('procs', len([d for d in os.listdir('/proc') if d.isdigit()]))`);
    // catatonit, the agent, maybe the zygote, this run and its waiter, the
    // next run's spare and its waiter.
    const procs = Number(/procs (\d+)/.exec(textOf(p))[1]);
    assert.ok(procs <= 8, textOf(p));
  });
});

describe('sweep waits for the last run in flight', { skip }, () => {
  let agent;
  before(async () => { agent = await startIsolated({ env: { VIVARIUM_USER_HEADER: 'X-User-ID' } }); });
  after(async () => { await agent?.stop(); });

  test("one user's leftovers are killed only when the other user's run has ended, which is untouched", async () => {
    const alice = await agent.connect({ 'X-User-ID': 'alice' });
    const bob = await agent.connect({ 'X-User-ID': 'bob' });
    const long = run(alice, `import time, subprocess
p = subprocess.Popen(['sleep', '60'])
time.sleep(3)
print('child alive', p.poll() is None)
p.kill()`);
    await new Promise((r) => setTimeout(r, 1000));
    const b = await run(bob, LEAVE(2));
    assert.match(textOf(b), /left 2/);
    assert.doesNotMatch(textOf(b), /stray/, 'no sweep while alice runs');
    const ba = await run(bob, ALIVE);
    // The check itself is a run; alice's run is still in flight, so the
    // sleepers are still there.
    assert.match(stdoutOf(ba), /^alive 2 /, textOf(ba));
    const a = await long;
    const at = textOf(a);
    assert.equal(a.isError, false, at);
    assert.match(at, /child alive True/, at);
    assert.match(at, /2 stray background processes/, at);
    const bc = await run(bob, ALIVE);
    assert.match(stdoutOf(bc), /^alive 0 /, textOf(bc));
  });
});

describe('VIVARIUM_SWEEP=1 is refused', () => {
  test('as root', { skip: !isRoot && 'needs root' }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vivarium-sweep-'));
    try {
      await assert.rejects(startServer(agentBin, {
        env: { VIVARIUM_WORKDIR: dir, VIVARIUM_HOST: '127.0.0.1', VIVARIUM_PORT: '0', VIVARIUM_SWEEP: '1' },
      }), /exited 1 before listening:[\s\S]*VIVARIUM_SWEEP=1[\s\S]*root/);
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });

});

// A Pod (and podman kube play) has no --init: the agent is PID 1 there.
// It forks then, and PID 1 stays a small init in front of it (init.c).
describe('started as PID 1', { skip }, () => {
  let agent, client;
  before(async () => {
    agent = await startIsolated({ asInit: true, env: { VIVARIUM_AGENT_SECRET: 's'.repeat(40) } });
    client = await agent.connect({ Authorization: `Bearer ${'s'.repeat(40)}` });
  });
  after(async () => { await agent?.stop(); });

  test('the agent runs as PID 1\'s child and sweeps; PID 1 reaps the orphans', async () => {
    const who = await run(client, `import os
print('init', open('/proc/1/comm').read().strip(), 'agent-is-1', os.getppid() == 1)
print('init-env-secret', b'ssssssss' in open('/proc/1/environ', 'rb').read())`);
    assert.match(stdoutOf(who), /init vivarium-agent/, textOf(who));
    assert.match(stdoutOf(who), /init-env-secret False/, textOf(who));
    const r = await run(client, LEAVE(3));
    assert.match(textOf(r), /3 stray background processes left running in the sandbox were stopped/, textOf(r));
    const a = await run(client, ALIVE);
    assert.match(stdoutOf(a), /^alive 0 /, textOf(a));
    // Killed orphans were PID 1's to reap: no zombies left in the namespace.
    const z = await run(client, `import glob
zs = [p for p in glob.glob('/proc/[0-9]*/stat') if open(p).read().rsplit(')', 1)[1].split()[0] == 'Z']
print('zombies', len(zs))`);
    assert.match(stdoutOf(z), /zombies 0/, textOf(z));
  });

  test('SIGTERM to PID 1 reaches the agent, which stops cleanly; PID 1 exits with its status', async () => {
    const kids = readFileSync(`/proc/${agent.srv.proc.pid}/task/${agent.srv.proc.pid}/children`, 'utf8').trim().split(/\s+/);
    assert.equal(kids.length, 1, 'unshare has one child: the namespace\'s PID 1');
    await client.close().catch(() => {});
    process.kill(Number(kids[0]), 'SIGTERM');
    const code = await Promise.race([agent.srv.exited, new Promise((r) => setTimeout(() => r('timeout'), 15000))]);
    assert.equal(code, 0, agent.srv.stderr());
    assert.match(agent.srv.stderr(), /signal 15: finishing requests in progress/);
    assert.match(agent.srv.stderr(), /vivarium-agent: stopped/);
  });
});
