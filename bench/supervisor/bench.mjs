// bench/supervisor: what the supervisor adds to Podman, measured side by
// side in one run against a private Podman service and the real sandbox
// image.  Each figure is the supervisor's path against the floor Podman
// itself sets, on the same machine at the same time:
//   (a) a new user's first call (initialize + the first run_python, which
//       makes the network, volume and container, starts it and waits for
//       the agent) against a bare create + start of the same container:
//       the very body the supervisor sent to Podman, replayed on the network
//       and volume it made.  Target: within 300 ms of it.  Each user's
//       measurements start once the sandboxes before it are idle (their
//       zygotes done importing), so that neither side pays for them.
//   (b) a warm run_python("print(1)") through the supervisor against the
//       same call straight to the agent's unix socket: the relay's cost.
//       Calls GAP_MS (100) apart.  Target: 1 ms (paired median).
//   (c) a returning user (the sandbox stopped, as the idle reaper leaves
//       it): initialize + the first run_python, against a bare start of the
//       same stopped container plus one warm call ((b)'s straight median).
//       Target: within 150 ms of it.
//   (d) USERS users x CLIENTS clients calling tools/list for SECONDS s,
//       once every sandbox is up and idle.  Target: zero errors.
// A missed target is printed, not an error: the exit status says only
// whether the benchmark ran.  VIVARIUM_BENCH_SHORT=1 runs each part once
// with tiny sizes (make test does, so that the benchmark cannot break
// unseen); BENCH_COLD, BENCH_WARM, BENCH_USERS, BENCH_CLIENTS and
// BENCH_SECONDS set the sizes.
//
// To replay what the supervisor asked of Podman, it reaches Podman through
// a pass-through socket of ours that copies the requests it carries (a
// byte pipe: well under a millisecond per call, charged to the supervisor).
import { createServer, connect } from 'node:net';
import { chmodSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { undici, sleep } from '../../tests/e2e/harness.mjs';
import {
  TAG, user, startPodman, stateDir, startSupervisor, cleanup, imagePresent, IMAGE, TOKEN,
} from '../../tests/supervisor/lib.mjs';

const { Agent, fetch: ufetch } = undici;

const SHORT = process.env.VIVARIUM_BENCH_SHORT === '1';
const size = (name, full, short) => Number(process.env[name] || (SHORT ? short : full));
const COLD = size('BENCH_COLD', 5, 1);
const WARM_CALLS = size('BENCH_WARM', 200, 5);
const GAP_MS = Number(process.env.GAP_MS ?? 100);
const USERS = size('BENCH_USERS', 32, 2);
const CLIENTS = size('BENCH_CLIENTS', 4, 2);
const SECONDS = size('BENCH_SECONDS', 20, 2);
const STOP_TIMEOUT = 5;		// the supervisor's default stop_timeout

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const p50 = (xs) => pct(xs, 0.5);
const now = () => Number(process.hrtime.bigint()) / 1e6;	// ms
const ms = (x) => `${x.toFixed(2)} ms`;
const list = (xs) => `[${xs.map((x) => x.toFixed(0)).join(', ')} ms]`;
const met = (ok) => (ok ? 'met' : 'MISSED');

// The CPU time a process has used, in seconds (/proc/PID/stat: utime, stime).
function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
  return (Number(f[11]) + Number(f[12])) / 100;	// USER_HZ
}

// A minimal MCP client on undici's request(), not fetch(): with fetch's
// streams, one Node thread making the load of (d) was the bottleneck (a
// whole core at ~1,300 requests/s, the supervisor at a quarter of one).
function mcp(url, { dispatcher, headers = {} }) {
  let sid = null, id = 0;
  const { origin, pathname } = new URL(url);
  const call = async (method, params, notify = false) => {
    const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
    if (sid) { h['mcp-session-id'] = sid; h['mcp-protocol-version'] = '2025-06-18'; }
    const body = notify ? { jsonrpc: '2.0', method, params } : { jsonrpc: '2.0', id: ++id, method, params };
    const r = await dispatcher.request({ origin, path: pathname, method: 'POST', headers: h, body: JSON.stringify(body) });
    const text = await r.body.text();
    const hdr = (k) => { const v = r.headers[k]; return Array.isArray(v) ? v[0] : v; };
    if (hdr('mcp-session-id')) sid = hdr('mcp-session-id');
    if (r.statusCode >= 300) throw new Error(`HTTP ${r.statusCode}: ${text.slice(0, 300)}`);
    if (notify) return null;
    let j;
    if ((hdr('content-type') || '').includes('text/event-stream')) {
      const line = text.split('\n').filter((l) => l.startsWith('data:')).pop();
      j = JSON.parse(line.slice(5));
    } else j = JSON.parse(text);
    if (j.error) throw new Error(JSON.stringify(j.error));
    return j.result;
  };
  return {
    call,
    async init() {
      await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
      await call('notifications/initialized', {}, true);
    },
  };
}

const printOne = { name: 'run_python', arguments: { code: 'print(1)' } };
async function runOne(c) {
  const r = await c.call('tools/call', printOne);
  const text = (r.content || []).map((x) => x.text || '').join('\n');
  if (r.isError || !/^1$/m.test(text)) throw new Error(`unexpected result: ${JSON.stringify(r).slice(0, 300)}`);
}

// Until runs come warm: the first run_python starts the zygote, and runs
// go cold (a new interpreter, the agent its parent) until it has imported.
const parentOf = { name: 'run_python', arguments: { code: "import os; print(open('/proc/%d/comm' % os.getppid()).read())" } };
async function warmed(c) {
  const deadline = now() + 60000;
  for (;;) {
    const r = await c.call('tools/call', parentOf);
    if (!/vivarium-agent/.test(JSON.stringify(r.content))) return true;
    if (now() > deadline) return false;
    await sleep(100);
  }
}

// A pass-through socket in front of Podman's that keeps a copy of every
// request (request line and body) the supervisor sends.  libcurl sends
// bodies with a Content-Length (podman.c), never chunked.
async function podmanTap(real, path) {
  const requests = [];
  const server = createServer((c) => {
    const up = connect(real);
    let pending = Buffer.alloc(0);
    c.on('data', (d) => {
      pending = Buffer.concat([pending, d]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end === -1) break;
        const head = pending.subarray(0, end).toString('latin1');
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        const len = m ? Number(m[1]) : 0;
        if (pending.length < end + 4 + len) break;
        requests.push({ line: head.split('\r\n')[0], body: pending.subarray(end + 4, end + 4 + len).toString() });
        pending = pending.subarray(end + 4 + len);
      }
    });
    c.pipe(up);
    up.pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  rmSync(path, { force: true });
  await new Promise((res, rej) => { server.once('error', rej); server.listen(path, res); });
  return {
    requests,
    // The body of the last container create for name.
    createBody(name) {
      for (let i = requests.length - 1; i >= 0; i--) {
        const r = requests[i];
        if (/^POST \S*\/libpod\/containers\/create /.test(r.line) && JSON.parse(r.body).name === name) return r.body;
      }
      throw new Error(`no container create for ${name} went through the tap`);
    },
    close() { server.close(); rmSync(path, { force: true }); },
  };
}

async function main() {
  if (!imagePresent()) throw new Error(`${IMAGE} missing from the test storage: make image-for-tests`);
  const podmanSock = `/run/vsv-${TAG}.podman.sock`;
  const podman = await startPodman(podmanSock);
  const tap = await podmanTap(podmanSock, `/run/vsv-${TAG}.tap.sock`);
  const state = stateDir();
  const sv = await startSupervisor({ podmanSock: `/run/vsv-${TAG}.tap.sock`, state, extra: 'max_connections: 1024' });
  const url = `${sv.base}/mcp`;
  const tcp = new Agent({ connections: 256, pipelining: 1 });
  const pod = new Agent({ connect: { socketPath: podmanSock } });
  const auth = { authorization: `Bearer ${TOKEN}` };
  const client = (u) => mcp(url, { dispatcher: tcp, headers: { ...auth, 'x-user-id': u } });
  const rundir = (u) => `${state}/users/${u}`;	// sandbox_names() in supervisor/backend_podman_spec.c
  const agents = [];

  // The bench's own Podman calls, straight to the service.
  const api = async (method, path, body) => {
    const r = await ufetch(`http://d/v4.0.0/libpod${path}`, {
      method, body, headers: { 'content-type': 'application/json' }, dispatcher: pod,
    });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`Podman ${method} ${path}: HTTP ${r.status}: ${text.slice(0, 300)}`);
    return text;
  };
  const timedApi = async (...a) => { const t0 = now(); await api(...a); return now() - t0; };
  const stop = (u) => api('POST', `/containers/vivarium-${u}/stop?timeout=${STOP_TIMEOUT}`);
  // What the supervisor does on the host before a start (rundir_make,
  // and the unlink in sandbox_ensure): its run directory open to the
  // sandbox again (it seals it, 0750, once the agent listens) and no
  // socket of the last run left in it.  Not timed on either side.
  const unseal = (u) => {
    if ((statSync(rundir(u)).mode & 0o777) === 0o750) chmodSync(rundir(u), 0o730);
    rmSync(`${rundir(u)}/agent.sock`, { force: true });
  };
  // Until the agent of a container we started answers, so that its
  // start-up is over before the next measurement.
  const agentUp = async (u) => {
    const deadline = now() + 60000;
    for (;;) {
      const a = new Agent({ connect: { socketPath: `${rundir(u)}/agent.sock` } });
      try {
        const r = await ufetch('http://localhost/health', { dispatcher: a });
        await r.text();
        if (r.status === 200) return;
      } catch { /* not yet */ } finally { await a.close().catch(() => {}); }
      if (now() > deadline) throw new Error(`the agent of vivarium-${u} never answered`);
      await sleep(5);
    }
  };

  try {
    console.log(`bench/supervisor: image ${IMAGE}, Podman service ${podmanSock}` +
      (SHORT ? '; SHORT mode (VIVARIUM_BENCH_SHORT=1): one of each, tiny sizes, the figures only show that it runs' : ''));

    // (a) new users: the supervisor's whole first call, then the bare
    // create + start of the container it made, from the same body.
    const newUsers = Array.from({ length: COLD }, (_, i) => user(`new${i}`));
    const fresh = [], init = [], first = [], second = [], bare = [], create = [], start = [], calls = [];
    for (const u of newUsers) {
      const n0 = tap.requests.length;
      const c = client(u);
      const t0 = now();
      await c.init();	// answered once the sandbox is up and its agent answers
      const t1 = now();
      await runOne(c);
      const t2 = now();
      calls.push(tap.requests.length - n0);
      fresh.push(t2 - t0);
      init.push(t1 - t0);
      first.push(t2 - t1);
      const t3 = now();
      await runOne(c);
      second.push(now() - t3);

      const body = tap.createBody(`vivarium-${u}`);
      await api('DELETE', `/containers/vivarium-${u}?force=true&timeout=0`);
      unseal(u);
      const tc = await timedApi('POST', '/containers/create', body);
      const ts = await timedApi('POST', `/containers/vivarium-${u}/start`);
      create.push(tc);
      start.push(ts);
      bare.push(tc + ts);
      await agentUp(u);
      // Both sides under the same load: the next user's supervisor side
      // must not compete with this container's zygote importing the data
      // stack (a core for a second or more), as the bare side never does.
      const settle = client(u);
      await settle.init();
      await warmed(settle);
    }
    const addedNew = p50(fresh.map((x, i) => x - bare[i]));
    console.log(`(a) a new user's first call (initialize + first run_python), ${COLD} users: p50 ${ms(p50(fresh))} ${list(fresh)}; ` +
      `a bare podman create + start of the same container spec p50 ${ms(p50(bare))} ${list(bare)}; ` +
      `added p50 ${ms(addedNew)} (ratio ${(p50(fresh) / p50(bare)).toFixed(2)}); target within 300 ms: ${met(addedNew <= 300)}`);
    console.log(`    of which: initialize (network, volume, container, start, agent answering) p50 ${ms(p50(init))}, ` +
      `the first run_python p50 ${ms(p50(first))}, the second p50 ${ms(p50(second))}; ` +
      `bare create p50 ${ms(p50(create))}, start p50 ${ms(p50(start))}; the supervisor made ${p50(calls)} Podman calls`);

    // (b) warm: through the supervisor vs straight to the agent's socket
    // (the bare container of (a), which is the supervisor's own again).
    const u = newUsers[0];
    const direct = new Agent({ connect: { socketPath: `${rundir(u)}/agent.sock` } });
    agents.push(direct);
    const viaSv = client(u);
    const straight = mcp('http://localhost/mcp', { dispatcher: direct });
    await viaSv.init();
    await straight.init();
    const warm = await warmed(straight);
    const warmup = SHORT ? 2 : 10;
    for (let i = 0; i < warmup; i++) { await runOne(viaSv); await runOne(straight); }
    const a = [], b = [];
    for (let i = 0; i < WARM_CALLS; i++) {
      // Alternate, so drift on the machine hits both sides alike.  Each
      // call GAP_MS after the last, as a model's come: the agent makes the
      // next run's process once a run has ended, and a call back to back
      // would wait for it, more on one side than the other.
      await sleep(GAP_MS);
      let t0 = now(); await runOne(viaSv); a.push(now() - t0);
      await sleep(GAP_MS);
      t0 = now(); await runOne(straight); b.push(now() - t0);
    }
    const pa = p50(a), pb = p50(b);
    const paired = p50(a.map((x, i) => x - b[i]));
    // The same for a call that does no work, where the relay is all there is.
    const la = [], lb = [];
    for (let i = 0; i < WARM_CALLS; i++) {
      let t0 = now(); await viaSv.call('tools/list', {}); la.push(now() - t0);
      t0 = now(); await straight.call('tools/list', {}); lb.push(now() - t0);
    }
    const pla = p50(la), plb = p50(lb);
    console.log(`(b) warm run_python("print(1)"), ${WARM_CALLS} calls each: via supervisor p50 ${ms(pa)} ` +
      `(p90 ${ms(pct(a, 0.9))}), straight to the agent socket p50 ${ms(pb)} (p90 ${ms(pct(b, 0.9))}); ` +
      `added ${ms(pa - pb)} (ratio ${(pa / pb).toFixed(3)}), median of paired differences ${ms(paired)}; ` +
      `target 1 ms: ${met(paired <= 1)}${warm ? '' : ' (runs never came from the zygote: cold calls)'}`);
    console.log(`    tools/list, same: via supervisor p50 ${ms(pla)}, straight ${ms(plb)}; added ${ms(pla - plb)} ` +
      `(ratio ${(pla / plb).toFixed(2)})`);

    // (c) returning users: each sandbox of (a) stopped as the reaper
    // stops it, then either the supervisor's initialize + first
    // run_python, or a bare start of it; the order alternates.
    const back = [], backInit = [], backFirst = [], bareStart = [], backCalls = [];
    for (const u of newUsers) await stop(u);
    for (let i = 0; i < newUsers.length; i++) {
      const u = newUsers[i];
      for (const side of i % 2 ? ['bare', 'supervisor'] : ['supervisor', 'bare']) {
        if (side === 'supervisor') {
          const n0 = tap.requests.length;
          const c = client(u);
          const t0 = now();
          await c.init();
          const t1 = now();
          await runOne(c);
          const t2 = now();
          back.push(t2 - t0);
          backInit.push(t1 - t0);
          backFirst.push(t2 - t1);
          backCalls.push(tap.requests.length - n0);
        } else {
          unseal(u);
          bareStart.push(await timedApi('POST', `/containers/vivarium-${u}/start`));
          await agentUp(u);
        }
        await stop(u);
      }
    }
    const floor = bareStart.map((x) => x + pb);
    const addedBack = p50(back.map((x, i) => x - floor[i]));
    console.log(`(c) a returning user's initialize + first run_python (the sandbox stopped), ${COLD} users: p50 ${ms(p50(back))} ${list(back)}; ` +
      `a bare podman start of the same stopped container p50 ${ms(p50(bareStart))} ${list(bareStart)} ` +
      `plus one warm call ((b), straight: ${ms(pb)}) = ${ms(p50(floor))}; ` +
      `added p50 ${ms(addedBack)} (ratio ${(p50(back) / p50(floor)).toFixed(2)}); target within 150 ms: ${met(addedBack <= 150)}`);
    console.log(`    of which: initialize (start, agent answering) p50 ${ms(p50(backInit))}, ` +
      `the first run_python p50 ${ms(p50(backFirst))}; the supervisor made ${p50(backCalls)} Podman calls`);

    // (d) USERS users x CLIENTS clients, tools/list for SECONDS s
    const users = Array.from({ length: USERS }, (_, i) => user(`load${i}`));
    const t0 = now();
    // Provision in small waves: 32 container starts at once swamp 2 cores.
    // Each wave's zygotes done importing (a core for a second or more
    // each) before the next wave and before the load: the load measures
    // the relay, not sandboxes starting, as (a) and (b) do.
    let cold = 0;
    for (let i = 0; i < users.length; i += 4)
      await Promise.all(users.slice(i, i + 4).map(async (uu) => {
        const c = client(uu);
        await c.init();
        if (!await warmed(c)) cold++;
      }));
    console.log(`    (d) setup: ${USERS} sandboxes provisioned and idle in ${((now() - t0) / 1000).toFixed(1)} s` +
      (cold ? `; ${cold} never ran warm` : ''));
    let okCount = 0, errCount = 0;
    const errs = new Map();
    const lat = [];
    const cpu0 = process.cpuUsage(), sv0 = cpuSeconds(sv.proc.pid), w0 = now();
    const end = now() + SECONDS * 1000;
    await Promise.all(users.flatMap((uu) => Array.from({ length: CLIENTS }, async () => {
      const c = client(uu);
      try { await c.init(); } catch (e) { errCount++; errs.set(String(e.message).slice(0, 80), 1); return; }
      while (now() < end) {
        const s = now();
        try {
          const r = await c.call('tools/list', {});
          if (!r.tools || !r.tools.length) throw new Error('no tools');
          okCount++;
          lat.push(now() - s);
        } catch (e) {
          errCount++;
          const k = String(e.message).slice(0, 80);
          errs.set(k, (errs.get(k) || 0) + 1);
        }
      }
    })));
    console.log(`(d) ${USERS} users x ${CLIENTS} clients, tools/list for ${SECONDS} s: ${okCount} ok, ${errCount} errors, ` +
      `${(okCount / SECONDS).toFixed(0)} requests/s, latency p50 ${ms(p50(lat))} p99 ${ms(pct(lat, 0.99))}; ` +
      `target zero errors: ${met(errCount === 0)}`);
    const wall = (now() - w0) / 1000, cpu = process.cpuUsage(cpu0);
    const share = (secs) => `${(secs / wall * 100).toFixed(0)}%`;
    console.log(`    CPU meanwhile, of one core: this benchmark's client ${share((cpu.user + cpu.system) / 1e6)}, ` +
      `the supervisor ${share(cpuSeconds(sv.proc.pid) - sv0)} (the machine has ${availableParallelism()})`);
    for (const [k, v] of errs) console.log(`    error x${v}: ${k}`);
  } finally {
    for (const x of agents) await x.close().catch(() => {});
    await tcp.close().catch(() => {});
    await pod.close().catch(() => {});
    await sv.stop();
    tap.close();
    cleanup();
    await podman.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
