// bench/gvisor: what gVisor costs, runc and runsc side by side in one run:
// two private Podman services over the same storage (one with the runtime
// deploy/vivarium-runsc), a supervisor on each, the same image and calls,
// alternated so that drift on the machine hits both alike.
//   (a) cold first call for a new user (network, volume, container, start,
//       ready, run_python("print(1)")), p50 of BENCH_COLD users each;
//   (b) warm run_python("print(1)"), p50 of BENCH_WARM calls each;
//   (c) `import pandas` in a fresh interpreter inside the sandbox, timed
//       there, p50 of BENCH_IMPORTS each.
// Each line gives runsc / runc as a ratio.  runc runs with the defaults (a
// user namespace per sandbox); runsc with runtime: runsc, uid_base: 0.
// VIVARIUM_BENCH_SHORT=1 (the short mode make test runs): one of each.
import { join } from 'node:path';
import { repoRoot, runPython } from '../../tests/e2e/harness.mjs';
import {
  TAG, user, startPodman, stateDir, startSupervisor, cleanup, imagePresent, IMAGE,
} from '../../tests/supervisor/lib.mjs';

const SHORT = process.env.VIVARIUM_BENCH_SHORT === '1';
const COLD = Number(process.env.BENCH_COLD || (SHORT ? 1 : 3));
const WARM = Number(process.env.BENCH_WARM || (SHORT ? 1 : 30));
const IMPORTS = Number(process.env.BENCH_IMPORTS || (SHORT ? 1 : 5));

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const now = () => Number(process.hrtime.bigint()) / 1e6;	// ms
const ms = (x) => `${x.toFixed(1)} ms`;

async function side(name, runtime, extra) {
  const saved = process.env.VP_RUNTIME;
  process.env.VP_RUNTIME = runtime;
  const podmanSock = `/run/vsv-${TAG}.${name}.sock`;
  const podman = await startPodman(podmanSock);
  if (saved === undefined) delete process.env.VP_RUNTIME; else process.env.VP_RUNTIME = saved;
  const state = `${stateDir()}/${name}`;
  const sv = await startSupervisor({ podmanSock, state, extra });
  return { name, podman, sv, cold: [], warm: [], imports: [], client: null };
}

const IMPORT = `import subprocess, sys, time
t = time.monotonic()
subprocess.run([sys.executable, '-c', 'import pandas'], check=True)
print('IMPORT_MS', (time.monotonic() - t) * 1000)`;

async function main() {
  if (!imagePresent()) throw new Error(`${IMAGE} missing from the test storage: make image-for-tests`);
  const sides = [];
  try {
    sides.push(await side('runc', 'runc', ''));
    sides.push(await side('runsc', join(repoRoot, 'deploy/vivarium-runsc'), 'sandbox:\n  runtime: runsc\n  uid_base: 0'));
    console.log(`bench/gvisor: image ${IMAGE}; runc vs ${join(repoRoot, 'deploy/vivarium-runsc')}` +
      (SHORT ? '; SHORT mode: the figures only show that it runs' : ''));
    for (let i = 0; i < COLD; i++)
      for (const s of sides) {
        const t0 = now();
        const c = await s.sv.client(user(`${s.name}${i}`));
        const r = await runPython(c, 'print(1)');
        s.cold.push(now() - t0);
        if (!/^1$/m.test(r.text)) throw new Error(`${s.name}: ${r.text}`);
        if (s.client) await s.client.close();
        s.client = c;
      }
    for (const s of sides) for (let i = 0; i < 3; i++) await runPython(s.client, 'print(1)');
    for (let i = 0; i < WARM; i++)
      for (const s of sides) {
        const t0 = now();
        await runPython(s.client, 'print(1)');
        s.warm.push(now() - t0);
      }
    for (let i = 0; i < IMPORTS; i++)
      for (const s of sides) {
        const r = await runPython(s.client, IMPORT);
        const m = /IMPORT_MS (\S+)/.exec(r.text);
        if (!m) throw new Error(`${s.name}: ${r.text}`);
        s.imports.push(Number(m[1]));
      }
    const [rc, rs] = sides;
    const line = (what, a, b) => console.log(`${what}: runc p50 ${ms(pct(a, 0.5))} [${a.map((x) => x.toFixed(0)).join(', ')}], ` +
      `runsc p50 ${ms(pct(b, 0.5))} [${b.map((x) => x.toFixed(0)).join(', ')}]; runsc/runc ${(pct(b, 0.5) / pct(a, 0.5)).toFixed(2)}`);
    line(`(a) cold first call, ${COLD} users each`, rc.cold, rs.cold);
    console.log(`(b) warm run_python("print(1)"), ${WARM} calls each: runc p50 ${ms(pct(rc.warm, 0.5))} (p90 ${ms(pct(rc.warm, 0.9))}), ` +
      `runsc p50 ${ms(pct(rs.warm, 0.5))} (p90 ${ms(pct(rs.warm, 0.9))}); runsc/runc ${(pct(rs.warm, 0.5) / pct(rc.warm, 0.5)).toFixed(2)}`);
    line(`(c) import pandas in a fresh interpreter, ${IMPORTS} each`, rc.imports, rs.imports);
  } finally {
    for (const s of sides) {
      if (s.client) await s.client.close().catch(() => {});
      await s.sv.stop().catch((e) => console.error(e.message));
    }
    cleanup();
    for (const s of sides) await s.podman.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
