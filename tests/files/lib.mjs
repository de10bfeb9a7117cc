// lib.mjs: helpers for the file-link tests (tests/files) and bench/files:
// a real Chromium (Debian's, driven by playwright-core), link tokens made
// and taken apart the way common/link.h describes them, multipart bodies
// written by hand (for names no browser would send), memory readings from
// /proc, and the two places links are served: the standalone agent on TCP
// and the supervisor in front of real Podman sandboxes.  The basics are
// tests/e2e/harness.mjs's, the Podman ones tests/supervisor/lib.mjs's.
import { spawn, execFileSync } from 'node:child_process';
import { createHmac, createHash, randomBytes } from 'node:crypto';
import {
  mkdtempSync, rmSync, readFileSync, readdirSync, lstatSync, openSync, writeSync, closeSync,
  statfsSync, writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startAgent, replyOf, repoRoot, freePort } from '../e2e/harness.mjs';
import {
  TAG, user, vp, startPodman, stateDir, startSupervisor, cleanup, imagePresent, IMAGE,
} from '../supervisor/lib.mjs';

export const CHROMIUM = process.env.VIVARIUM_CHROMIUM || '/usr/bin/chromium';
export const KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// ---------------------------------------------------------------- browser

// Headless Chromium with nothing of its own going on (no updates, sync,
// QUIC, first-run pages).  Playwright gives every launch a fresh profile
// directory of its own (and refuses --user-data-dir in args), removed on
// close; downloads land in a directory of ours.
export async function launchBrowser() {
  const downloads = mkdtempSync(join(tmpdir(), 'vivarium-files-dl-'));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    downloadsPath: downloads,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--no-proxy-server'],
  });
  return {
    browser, downloads,
    async context(opts = {}) { return browser.newContext({ acceptDownloads: true, ...opts }); },
    async close() {
      await browser.close().catch(() => {});
      rmSync(downloads, { recursive: true, force: true });
    },
  };
}

// page.goto() of a URL that answers with an attachment rejects ("Download
// is starting"); the download event is what counts.
export async function download(page, url) {
  const [dl] = await Promise.all([
    page.waitForEvent('download', { timeout: 30000 }),
    page.goto(url).catch((e) => { if (!/Download is starting|net::ERR_ABORTED/.test(e.message)) throw e; }),
  ]);
  return dl;
}

// ---------------------------------------------------------------- tokens
// token = b64u(payload) "." b64u(HMAC-SHA256(user key, payload));
// payload = "v1\n<purpose>\n<user>\n<expiry>\n<path>";
// user key = HMAC-SHA256(master key, "vivarium user key\n" + user).

export const b64u = (b) => Buffer.from(b).toString('base64url');
export const unb64u = (s) => Buffer.from(s, 'base64url');
export const hmac = (key, data) => createHmac('sha256', key).update(data).digest();
export const sha256 = (b) => createHash('sha256').update(b).digest('hex');

export function userKey(master, u) { return hmac(master, `vivarium user key\n${u}`); }

export function payloadOf({ purpose, user: u, expiry, path = '' }) {
  return `v1\n${purpose}\n${u}\n${expiry}\n${path}`;
}

export function mint(key, fields) {
  const p = payloadOf(fields);
  return `${b64u(p)}.${b64u(hmac(key, p))}`;
}

export function parseToken(tok) {
  const [p, m] = tok.split('.');
  const [v, purpose, u, expiry, ...rest] = unb64u(p).toString('utf8').split('\n');
  return { v, purpose, user: u, expiry: Number(expiry), path: rest.join('\n'), mac: unb64u(m) };
}

// The token and the route of a link: /f/<t>/<name>, /up/<t>, /ws/<t>.
export function splitLink(url) {
  const u = new URL(url);
  const m = /^\/(f|up|ws)\/([^/]+)(\/.*)?$/.exec(u.pathname);
  if (!m) throw new Error(`not a file link: ${url}`);
  return { origin: u.origin, route: m[1], token: m[2], rest: m[3] || '' };
}

// The master key file holds 32 random bytes as 64 hex digits and a
// newline, made at first start.  The tests check this reading first (a
// link minted with it must open) before they count on a refusal.
export function readMasterKey(file) {
  const txt = readFileSync(file, 'latin1').replace(/\r?\n$/, '');
  if (!/^[0-9a-fA-F]{64}$/.test(txt)) throw new Error(`${file}: not a key of 64 hex digits`);
  return Buffer.from(txt, 'hex');
}

export const now = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------- HTTP

// A multipart/form-data body with file parts whose filename bytes are
// exactly what is given (a Buffer or a string taken as UTF-8).
export function multipart(files, boundary = `----vivarium${randomBytes(8).toString('hex')}`) {
  const parts = [];
  for (const f of files) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${f.field || 'file'}"; filename="`));
    parts.push(Buffer.isBuffer(f.name) ? f.name : Buffer.from(f.name, 'utf8'));
    parts.push(Buffer.from(`"\r\nContent-Type: ${f.type || 'application/octet-stream'}\r\n\r\n`));
    parts.push(Buffer.from(f.data));
    parts.push(Buffer.from('\r\n'));
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}`, boundary };
}

// POST files to an upload URL, asking for the JSON answer.
export async function upload(url, files, { accept = 'application/json' } = {}) {
  const { body, contentType } = multipart(files);
  return replyOf(await fetch(url, { method: 'POST', headers: { 'content-type': contentType, accept }, body }));
}

export async function get(url, init = {}) {
  const res = await fetch(url, { redirect: 'manual', ...init });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, text: body.toString('utf8') };
}

// A program run in the background, off node's thread; resolves with
// { code, stdout, stderr }.
function background(cmd, args) {
  return new Promise((res) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => res({ code, stdout: out, stderr: err }));
  });
}

// curl, its output to a file or a pipe of ours.
export const curl = (args) => background('curl', ['-sS', ...args]);

// A bash pipeline (pipefail).
export const sh = (script) => background('bash', ['-o', 'pipefail', '-c', script]);

// ---------------------------------------------------------------- files

// Every entry under dir, as "relative/path size" (directories end in /),
// sorted: two listings compare equal when nothing was added or changed.
export function listTree(dir, { skip = [] } = {}) {
  const out = [];
  const walk = (rel) => {
    let names;
    try { names = readdirSync(join(dir, rel)); } catch { return; }
    for (const n of names) {
      const r = rel ? `${rel}/${n}` : n;
      if (skip.includes(r)) continue;
      let st;
      // Gone between readdir and lstat (a temporary file the server just
      // removed): it is not there.
      try { st = lstatSync(join(dir, r)); } catch (e) { if (e.code === 'ENOENT') continue; throw e; }
      if (st.isDirectory()) { out.push(`${r}/`); walk(r); } else out.push(`${r} ${st.size}`);
    }
  };
  walk('');
  return out.sort();
}

// A file of size bytes made of one random 1 MiB block over and over: fast
// to write, not sparse, not all zeros.  Returns { path, size, sha256 }.
export function bigFile(dir, size, name = 'big.bin') {
  const path = join(dir, name);
  const block = randomBytes(MiB);
  const h = createHash('sha256');
  const fd = openSync(path, 'w');
  try {
    for (let off = 0; off < size; off += block.length) {
      const b = size - off >= block.length ? block : block.subarray(0, size - off);
      writeSync(fd, b);
      h.update(b);
    }
  } finally { closeSync(fd); }
  return { path, size, sha256: h.digest('hex') };
}

export function freeBytes(dir) {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

// The sha256 of a file, by sha256sum (off node's thread).
export async function fileSha(path) {
  const r = await sh(`sha256sum < '${path}'`);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.split(' ')[0];
}

// ---------------------------------------------------------------- memory

// Fields of /proc/<pid>/status in bytes (VmRSS, VmHWM, RssAnon, RssFile).
export function procStatus(pid) {
  const st = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(Vm\w+|Rss\w+):\s+(\d+) kB/.exec(line);
    if (m) st[m[1]] = Number(m[2]) * 1024;
  }
  return st;
}

// Resets the peak resident set (VmHWM) of a process to its current RSS
// (proc(5), clear_refs "5"), so that the peak read after a transfer is the
// peak during it.
export function resetPeak(pid) {
  try { writeFileSync(`/proc/${pid}/clear_refs`, '5'); return true; } catch { return false; }
}

// Samples VmRSS of some processes every few ms until stop(); stop()
// returns per name { peakRss, hwm, anon, file } (hwm read at the end).
export function memWatch(pids, everyMs = 25) {
  const peak = {};
  for (const [k, p] of Object.entries(pids)) { resetPeak(p); peak[k] = { peakRss: 0, anon: 0, file: 0 }; }
  const tick = () => {
    for (const [k, p] of Object.entries(pids)) {
      try {
        const s = procStatus(p);
        if (s.VmRSS > peak[k].peakRss) Object.assign(peak[k], { peakRss: s.VmRSS, anon: s.RssAnon, file: s.RssFile });
      } catch { /* gone */ }
    }
  };
  tick();
  const t = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(t);
      tick();
      for (const [k, p] of Object.entries(pids)) {
        try { peak[k].hwm = procStatus(p).VmHWM; } catch { peak[k].hwm = NaN; }
      }
      return peak;
    },
  };
}

export const mb = (b) => `${(b / MiB).toFixed(1)} MB`;

// The host pid of the vivarium-agent in a container: a descendant of the
// container's first process (podman inspect .State.Pid) named
// vivarium-agent.
export function containerAgentPid(name) {
  const root = Number(vp('inspect', '-f', '{{.State.Pid}}', name));
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push({ pid: Number(d), comm });
    } catch { /* gone */ }
  }
  const rootComm = (() => { try { return readFileSync(`/proc/${root}/comm`, 'utf8').trim(); } catch { return ''; } })();
  if (rootComm === 'vivarium-agent') return root;
  const queue = [root];
  while (queue.length) {
    const p = queue.shift();
    for (const k of kids.get(p) || []) {
      if (k.comm === 'vivarium-agent') return k.pid;
      queue.push(k.pid);
    }
  }
  throw new Error(`no vivarium-agent under pid ${root} of ${name}`);
}

// A container's log, stdout and stderr (podman logs writes each to its own).
export function containerLogs(name) {
  try {
    return execFileSync('sh', ['-c', `. "${repoRoot}/tests/lib/podman.sh" && vp_env && vpodman logs "$1" 2>&1`, 'sh', name],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch { return ''; }
}

// ---------------------------------------------------------------- targets
// A target is where links are served, with what a test needs of it:
//   name, base (the public URL), users (ids to use), client(u) (an SDK
//   client), ws(u) (the workspace directory on this host), key(u) (the
//   user key links are signed with), logs() (stderr so far), pids(u)
//   ({ supervisor?, agent } host pids), stop().

// The standalone agent on TCP with a fresh workspace (or a given one).
// Its user is "local"; its key file the default, <workdir>/.vivarium/link.key.
export async function agentTarget({ env = {}, workspace = null, leftDirs = [], port = 0 } = {}) {
  port = port || await freePort();
  const agent = await startAgent({ transport: 'tcp', workspace, env: { VIVARIUM_PORT: String(port), ...env } });
  const clients = new Map();
  return {
    name: 'agent', agent, base: agent.baseUrl, users: ['local'], workspace: agent.workspace,
    async client() {
      if (!clients.has('local')) clients.set('local', await agent.connect());
      return clients.get('local');
    },
    ws() { return agent.workspace; },
    keyFile() { return env.VIVARIUM_LINK_KEY_FILE || join(agent.workspace, '.vivarium', 'link.key'); },
    key(u = 'local') { return userKey(readMasterKey(this.keyFile()), u); },
    logs() { return agent.stderr(); },
    pids() { return { agent: agent.proc.pid }; },
    // The agent again on the same workspace (and key file, unless newKey
    // removes it first); this one stops.
    // The same port unless newPort.
    async restart({ newKey = false, newPort = false } = {}) {
      for (const cl of clients.values()) await cl.close().catch(() => {});
      clients.clear();
      await agent.stop({ keep: true });
      if (newKey) rmSync(this.keyFile());
      const n = await agentTarget({ env, workspace: agent.workspace, leftDirs: [...leftDirs, agent.dir],
        port: newPort ? 0 : port });
      return n;
    },
    async stop(opts) {
      const code = await agent.stop(opts);
      for (const d of leftDirs) rmSync(d, { recursive: true, force: true });
      return code;
    },
  };
}

// The supervisor with a private Podman service and the real image.
// Users are this run's ids (TAG-<name>); each one's workspace is its
// volume's mount point on this host.
export async function supervisorTarget({ extra = '', podman = null, state = null, port = 0, readyTimeout } = {}) {
  if (!imagePresent()) throw new Error(`${IMAGE} is not in the test storage: run make image-for-tests`);
  const podmanSock = `/run/vsv-${TAG}.podman.sock`;
  const ownPodman = !podman;
  if (!podman) podman = await startPodman(podmanSock);
  state = state || stateDir();
  const sv = await startSupervisor({ podmanSock: podman.sock, state, extra, port, ...(readyTimeout ? { readyTimeout } : {}) });
  const clients = new Map();
  const t = {
    name: 'supervisor', sv, podman, state, base: sv.base, users: [user('alice'), user('bob')],
    async client(u) {
      if (!clients.has(u)) clients.set(u, await sv.client(u));
      return clients.get(u);
    },
    ws(u) { return vp('volume', 'inspect', '-f', '{{.Mountpoint}}', `vivarium-${u}-workspace`); },
    keyFile() { return join(state, 'link.key'); },
    key(u) { return userKey(readMasterKey(this.keyFile()), u); },
    // The supervisor's log and those of the users' agents.
    logs() {
      return sv.stderr() + t.users.map((u) => containerLogs(`vivarium-${u}`)).join('\n');
    },
    pids(u) { return { supervisor: sv.proc.pid, agent: containerAgentPid(`vivarium-${u}`) }; },
    // A new supervisor on the same Podman service and state directory
    // (its sandboxes are adopted, as after a restart); this one stops.
    // The same port unless newPort.
    async restart(newExtra = extra, { newKey = false, newPort = false } = {}) {
      for (const c of clients.values()) await c.close().catch(() => {});
      clients.clear();
      await sv.stop();
      if (newKey) rmSync(this.keyFile());
      const n = await supervisorTarget({ extra: newExtra, podman, state, port: newPort ? 0 : Number(new URL(sv.base).port), readyTimeout });
      n.own = t.own;
      return n;
    },
    async stop() {
      for (const c of clients.values()) await c.close().catch(() => {});
      await sv.stop();
      if (t.own) { cleanup(); await podman.stop(); }
    },
    own: ownPodman,
  };
  return t;
}
