// stack.mjs: the real supervisor (backend: kubernetes) against the fake API
// server and kubelet, with the real egress proxy standing in for its
// Service and a small origin behind it.
//
//   const s = await startStack({ extra: 'idle_stop_after: 2s' });
//   s.api (fakeapi.mjs), s.agentPort (kubernetes.agent_port), s.sv (tests/supervisor/lib.mjs's handle: post,
//   client, stop, stderr, conf), s.secretOf(user) (the secret of the user's
//   Pod now), s.secrets() (every secret a Pod was POSTed with), s.ctl(...args),
//   s.origin (http://127.0.0.2:PORT, reachable through the proxy only by
//   its allow list), await s.restart({ kubeconfig, extra, kube }), await s.stop()
//   (kube: more lines inside the kubernetes: block, e.g. 'agent_port: 9000',
//   which replaces the one startStack sets)
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, copyFileSync, rmSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:net';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { startSupervisor } from '../supervisor/lib.mjs';
import { egressBin, ctlBin, until, freePort } from '../e2e/harness.mjs';
import { startApi, deployRole } from './lib.mjs';

export const NS = 'vivarium';

// The agent secret a Pod was made with (random per Pod: read back from it).
export const podSecret = (pod) => pod?.spec.containers[0].env.find((e) => e.name === 'VIVARIUM_AGENT_SECRET')?.value;

const listens = (host, port) => new Promise((res) => {
  const s = connect({ host, port }, () => { s.destroy(); res(true); });
  s.on('error', () => res(false));
});
const waitPort = (host, port) => until(() => listens(host, port), { ms: 10000, what: `a listener on ${host}:${port}` });

// The real egress proxy on 127.0.0.1, allowed to one origin on 127.0.0.2.
export async function startEgress() {
  const origin = http.createServer((req, res) => { res.end(`origin says hello to ${req.url}\n`); });
  await new Promise((r) => origin.listen(0, '127.0.0.2', r));
  const oport = origin.address().port;
  const port = await freePort();
  const proc = spawn(egressBin, [], {
    env: { PATH: process.env.PATH, VIVARIUM_EGRESS_LISTEN: `127.0.0.1:${port}`,
      VIVARIUM_EGRESS_PORTS: String(oport), VIVARIUM_EGRESS_ALLOW_CIDRS: '127.0.0.2/32', VIVARIUM_EGRESS_VERBOSE: '1',
      // On the host, its own addresses are the host's: no list to read.
      VIVARIUM_EGRESS_HOST_ADDRESSES: 'none' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  await waitPort('127.0.0.1', port).catch((e) => { throw new Error(`${e.message}: ${log}`); });
  return {
    port, origin: `http://127.0.0.2:${oport}`, log: () => log,
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.on('exit', r)));
      await new Promise((r) => origin.close(r));
    },
  };
}

// inCluster: no kubeconfig; the service account's token and CA in a
// directory (VIVARIUM_KUBE_SA_DIR) and KUBERNETES_SERVICE_HOST/_PORT, as
// a Pod has them.
export async function startStack({ extra = '', kube = '', readyTimeout = '20s', api: apiOpts = {}, svEnv = {}, inCluster = false } = {}) {
  const dir = mkdtempSync('/tmp/vk8s-stack-');
  const api = await startApi({ namespace: NS, rbac: deployRole(), ...apiOpts });
  const egress = await startEgress();
  const keyHex = randomBytes(32).toString('hex');
  const keyFile = join(dir, 'link.key');
  writeFileSync(keyFile, keyHex + '\n');
  chmodSync(keyFile, 0o600);
  const port = await freePort();
  // Not the default 8700: anything on this machine bound to 0.0.0.0:8700
  // (a `podman kube play` of another suite) would take it from every
  // loopback address the kubelet gives Pods.
  const agentPort = await freePort();
  const saDir = join(dir, 'serviceaccount');
  if (inCluster) {
    mkdirSync(saDir);
    writeFileSync(join(saDir, 'token'), api.token);
    copyFileSync(api.caFile, join(saDir, 'ca.crt'));
    writeFileSync(join(saDir, 'namespace'), NS);
    svEnv = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(api.port), VIVARIUM_KUBE_SA_DIR: saDir, ...svEnv };
  }
  const conf = (kubeconfig = api.kubeconfig, more = '', kmore = kube) => {
    const k = kmore.split('\n').filter((l) => l.trim());
    return [
      'backend: kubernetes',
      `links:\n  key_file: ${keyFile}`,
      `kubernetes:\n${inCluster ? '' : `  kubeconfig: ${kubeconfig}\n`}  namespace: ${NS}\n  egress_proxy: 127.0.0.1:${egress.port}`,
      ...(k.some((l) => /^\s*agent_port:/.test(l)) ? [] : [`  agent_port: ${agentPort}`]),
      ...k.map((l) => `  ${l.trim()}`),
      extra,
      more,
    ].join('\n');
  };
  const state = join(dir, 'state');
  const start = (kc, more, kmore) => startSupervisor({ podmanSock: join(dir, 'no-podman.sock'), state, port, readyTimeout, extra: conf(kc, more, kmore), env: svEnv });
  let sv;
  try {
    sv = await start();
  } catch (e) {
    await egress.stop();
    await api.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const s = {
    api, egress, dir, keyHex, port, agentPort, state, sv, saDir,
    secretOf: (u) => podSecret(api.pod(`vivarium-${u}`)),
    secrets: () => api.calls('create', 'pods').map((r) => podSecret(r.body)).filter(Boolean),
    // vivariumctl with the running supervisor's configuration.  Never
    // spawnSync: the fake API server runs in this process and must answer.
    ctl(...args) {
      return new Promise((res) => {
        execFile(ctlBin, ['-f', s.sv.conf, ...args], { encoding: 'utf8', timeout: 60000 }, (err, out, errOut) => {
          res({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, out, err: errOut });
        });
      });
    },
    // Stops the supervisor and starts it again on the same state, with
    // another kubeconfig and more configuration lines (kube: in the
    // kubernetes: block) if given.
    async restart({ kubeconfig, extra: more, kube: kmore } = {}) {
      await s.sv.stop();
      s.sv = await start(kubeconfig, more, kmore);
      return s.sv;
    },
    async stop() {
      let err;
      try { await s.sv.stop(); } catch (e) { err = e; }
      await egress.stop();
      await api.close();
      rmSync(dir, { recursive: true, force: true });
      if (err) throw err;
    },
  };
  return s;
}
