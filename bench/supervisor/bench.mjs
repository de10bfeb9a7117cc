// bench/supervisor: the supervisor's costs, measured side by side in one run
// against a private Podman service and the real sandbox image.
//   (a) cold first call for a new user: network + volume + container +
//       start + ready + run_python("print(1)"), p50 of 5 users;
//   (b) warm run_python("print(1)") through the supervisor against the same
//       call straight to the agent's unix socket: the added overhead;
//   (c) 32 users x 4 concurrent clients calling tools/list for 20 s.
// Targets: (a) <= 1 s, (b) <= 1 ms p50 added, (c) zero errors.
import { Agent, fetch as ufetch } from '../../tests/e2e/node_modules/undici/index.js';
import {
  TAG, user, sleep, startPodman, stateDir, startSupervisor, cleanup, imagePresent, IMAGE, TOKEN,
} from '../../tests/supervisor/lib.mjs';

const COLD_USERS = Number(process.env.BENCH_COLD || 5);
const WARM_CALLS = Number(process.env.BENCH_WARM || 200);
const USERS = Number(process.env.BENCH_USERS || 32);
const CLIENTS = Number(process.env.BENCH_CLIENTS || 4);
const SECONDS = Number(process.env.BENCH_SECONDS || 20);

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const now = () => Number(process.hrtime.bigint()) / 1e6;	// ms
const ms = (x) => `${x.toFixed(2)} ms`;

// A minimal MCP client over fetch: initialize, then JSON-RPC calls.
function mcp(url, { dispatcher, headers = {} }) {
  let sid = null, id = 0;
  const call = async (method, params, notify = false) => {
    const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
    if (sid) { h['mcp-session-id'] = sid; h['mcp-protocol-version'] = '2025-06-18'; }
    const body = notify ? { jsonrpc: '2.0', method, params } : { jsonrpc: '2.0', id: ++id, method, params };
    const r = await ufetch(url, { method: 'POST', headers: h, body: JSON.stringify(body), dispatcher });
    const text = await r.text();
    if (r.headers.get('mcp-session-id')) sid = r.headers.get('mcp-session-id');
    if (r.status >= 300) throw new Error(`HTTP ${r.status}: ${text.slice(0, 300)}`);
    if (notify) return null;
    let j;
    if ((r.headers.get('content-type') || '').includes('text/event-stream')) {
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

async function main() {
  if (!imagePresent()) throw new Error(`${IMAGE} missing from the test storage: make image-for-tests`);
  const podmanSock = `/run/vsv-${TAG}.podman.sock`;
  const podman = await startPodman(podmanSock);
  const state = stateDir();
  const sv = await startSupervisor({ podmanSock, state, extra: `max_connections: 1024` });
  const url = `${sv.base}/mcp`;
  const tcp = new Agent({ connections: 256, pipelining: 1 });
  const auth = { authorization: `Bearer ${TOKEN}` };
  try {
    console.log(`bench/supervisor: image ${IMAGE}, Podman service ${podmanSock}`);

    // (a) cold first call
    const cold = [], ready = [], first = [], second = [];
    for (let i = 0; i < COLD_USERS; i++) {
      const u = user(`cold${i}`);
      const t0 = now();
      const c = mcp(url, { dispatcher: tcp, headers: { ...auth, 'x-user-id': u } });
      await c.init();	// answered once the sandbox is up and its agent answers
      const t1 = now();
      const r = await c.call('tools/call', printOne);
      const t2 = now();
      cold.push(t2 - t0);
      ready.push(t1 - t0);
      first.push(t2 - t1);
      if (!JSON.stringify(r).includes('1')) throw new Error('unexpected result');
      const t3 = now();
      await c.call('tools/call', printOne);
      second.push(now() - t3);
    }
    const coldP50 = pct(cold, 0.5);
    console.log(`(a) cold first call (network+volume+container+start+ready+run_python): ` +
      `p50 ${ms(coldP50)} of ${COLD_USERS} [${cold.map((x) => x.toFixed(0)).join(', ')} ms]; ` +
      `target 1000 ms: ${coldP50 <= 1000 ? 'met' : 'MISSED'} (ratio ${(coldP50 / 1000).toFixed(2)})`);
    console.log(`    of which: sandbox up and answering (initialize done) p50 ${ms(pct(ready, 0.5))}, ` +
      `the first run_python in it p50 ${ms(pct(first, 0.5))}, the second p50 ${ms(pct(second, 0.5))}`);

    // (b) warm: through the supervisor vs straight to the agent's socket
    const u = user('cold0');
    const direct = new Agent({ connect: { socketPath: `${state}/users/${u}/agent.sock` } });
    const viaSv = mcp(url, { dispatcher: tcp, headers: { ...auth, 'x-user-id': u } });
    const straight = mcp('http://localhost/mcp', { dispatcher: direct });
    await viaSv.init();
    await straight.init();
    const a = [], b = [];
    for (let i = 0; i < 10; i++) { await viaSv.call('tools/call', printOne); await straight.call('tools/call', printOne); }
    for (let i = 0; i < WARM_CALLS; i++) {
      // Alternate, so drift on the machine hits both sides alike.
      let t0 = now(); await viaSv.call('tools/call', printOne); a.push(now() - t0);
      t0 = now(); await straight.call('tools/call', printOne); b.push(now() - t0);
    }
    const pa = pct(a, 0.5), pb = pct(b, 0.5);
    const paired = pct(a.map((x, i) => x - b[i]), 0.5);
    // The same for a call that does no work, where the relay is all there is.
    const la = [], lb = [];
    for (let i = 0; i < WARM_CALLS; i++) {
      let t0 = now(); await viaSv.call('tools/list', {}); la.push(now() - t0);
      t0 = now(); await straight.call('tools/list', {}); lb.push(now() - t0);
    }
    const pla = pct(la, 0.5), plb = pct(lb, 0.5);
    console.log(`(b) warm run_python("print(1)"), ${WARM_CALLS} calls each: via supervisor p50 ${ms(pa)} ` +
      `(p90 ${ms(pct(a, 0.9))}), straight to the agent socket p50 ${ms(pb)} (p90 ${ms(pct(b, 0.9))}); ` +
      `added ${ms(pa - pb)} (ratio ${(pa / pb).toFixed(3)}), median of paired differences ${ms(paired)}; ` +
      `target 1 ms: ${paired <= 1 ? 'met' : 'MISSED'}`);
    console.log(`    tools/list, same: via supervisor p50 ${ms(pla)}, straight ${ms(plb)}; added ${ms(pla - plb)} ` +
      `(ratio ${(pla / plb).toFixed(2)})`);
    await direct.close();

    // (c) 32 users x 4 clients, tools/list for 20 s
    const users = Array.from({ length: USERS }, (_, i) => user(`load${i}`));
    const t0 = now();
    // Provision in small waves: 32 container starts at once swamp 2 cores.
    for (let i = 0; i < users.length; i += 4)
      await Promise.all(users.slice(i, i + 4).map(async (uu) => {
        const c = mcp(url, { dispatcher: tcp, headers: { ...auth, 'x-user-id': uu } });
        await c.init();
      }));
    console.log(`    (c) setup: ${USERS} sandboxes provisioned in ${((now() - t0) / 1000).toFixed(1)} s`);
    let okCount = 0, errCount = 0;
    const errs = new Map();
    const lat = [];
    const end = now() + SECONDS * 1000;
    await Promise.all(users.flatMap((uu) => Array.from({ length: CLIENTS }, async () => {
      const c = mcp(url, { dispatcher: tcp, headers: { ...auth, 'x-user-id': uu } });
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
    console.log(`(c) ${USERS} users x ${CLIENTS} clients, tools/list for ${SECONDS} s: ${okCount} ok, ${errCount} errors, ` +
      `${(okCount / SECONDS).toFixed(0)} requests/s, latency p50 ${ms(pct(lat, 0.5))} p99 ${ms(pct(lat, 0.99))}; ` +
      `target zero errors: ${errCount === 0 ? 'met' : 'MISSED'}`);
    for (const [k, v] of errs) console.log(`    error x${v}: ${k}`);
  } finally {
    await tcp.close().catch(() => {});
    await sv.stop();
    cleanup();
    await podman.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
