// The file links through the supervisor: real Podman, the real sandbox
// image, two users.  Run by `make test-files` (tests/files/run.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sleep, runPython } from '../e2e/harness.mjs';
import { startSupervisor, TAG, user } from '../supervisor/lib.mjs';
import {
  supervisorTarget, launchBrowser, mint, parseToken, splitLink, get, upload, hmac, readMasterKey,
  MiB, userKey, now, multipart, listTree, freeBytes, mb,
} from './lib.mjs';
import {
  browserScenarios, badInputScenarios, capScenario, bigScenarios, keyScenarios, shareFile, uploadLink, workspaceLink,
} from './scenarios.mjs';

let t, br;

before(async () => {
  br = await launchBrowser();
  t = await supervisorTarget();
});

after(async () => {
  if (t) await t.stop();
  if (br) await br.close();
});

const env = () => ({ t, br, u: t.users[0] });
browserScenarios(env);
badInputScenarios(env);

test('two users: a sandbox cannot mint a link into another user\'s workspace', async () => {
  const [alice, bob] = t.users;
  const ca = await t.client(alice), cb = await t.client(bob);
  const BOB = `BOB-ONLY-${randomBytes(6).toString('hex')}`;
  await runPython(cb, `open('bob.txt','w').write(${JSON.stringify(BOB)})`);
  await runPython(ca, "open('alice.txt','w').write('ALICE')");
  const a = await shareFile(ca, 'alice.txt');
  const { origin, token } = splitLink(a.url);
  const tp = parseToken(token);
  assert.equal(tp.user, alice);

  // Everything alice's sandbox can read: its environment and the files it
  // can open.  Whatever key material it holds signs only for alice.
  const r = await runPython(ca, `import os, json
env = dict(os.environ)
found = {}
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for f in ('environ', 'cmdline'):
            try: found['/proc/%s/%s' % (pid, f)] = open('/proc/%s/%s' % (pid, f), 'rb').read().hex()
            except Exception as e: pass
for root in ('/run/vivarium', '/workspace/.vivarium', '/etc/vivarium'):
    for dp, dn, fn in os.walk(root):
        for n in fn:
            p = os.path.join(dp, n)
            try: found[p] = open(p, 'rb').read(256).hex()
            except Exception as e: found[p] = 'ERR ' + type(e).__name__
print('ENV', json.dumps(env)); print('FILES', json.dumps(found))`);
  const envs = JSON.parse(/ENV (\{.*\})/.exec(r.text)[1]);
  const files = JSON.parse(/FILES (\{.*\})/.exec(r.text)[1]);
  const master = readMasterKey(t.keyFile());
  const candidates = [];
  for (const v of Object.values(envs)) if (v.length >= 16) candidates.push(Buffer.from(v), Buffer.from(v, 'hex'), Buffer.from(v, 'base64'));
  for (const v of Object.values(files)) if (!v.startsWith('ERR')) {
    const b = Buffer.from(v, 'hex');
    // A file whole, and each NUL-separated item (environ) and its value.
    const items = [b.toString(), ...b.toString().split('\0'), ...b.toString().split('\0').map((x) => x.slice(x.indexOf('=') + 1))];
    candidates.push(b);
    for (const x of items.map((y) => y.trim()).filter((y) => y.length >= 16))
      candidates.push(Buffer.from(x), Buffer.from(x, 'hex'), Buffer.from(x, 'base64'));
  }
  // The master key must not be among them, in any spelling.
  const masterHex = master.toString('hex');
  for (const cand of candidates) {
    assert.ok(!cand.equals(master) && !cand.toString().includes(masterHex), 'the sandbox can read the master key');
  }
  // Which candidate signs alice's links (the sandbox's own key)?
  const payload = Buffer.from(token.split('.')[0], 'base64url');
  const own = candidates.find((k) => k.length && hmac(k, payload).equals(tp.mac));
  const keys = [...(own ? [own] : []), t.key(alice), randomBytes(32), Buffer.alloc(32)];
  const forBob = { ...tp, user: bob, path: 'bob.txt' };
  for (const k of keys) {
    const forged = mint(k, forBob);
    const x = await get(`${origin}/f/${forged}/bob.txt`);
    assert.equal(x.status, 403, `a link for bob signed with ${k === own ? "alice's sandbox key" : 'a wrong key'}: ${x.status}`);
    assert.ok(!x.text.includes(BOB));
  }
  // Control: signed with bob's own key (made from the master key on the
  // host), the same link opens; so the refusals above are the key's doing.
  const good = mint(t.key(bob), forBob);
  const g = await get(`${origin}/f/${good}/bob.txt`);
  assert.equal(g.status, 200, g.text);
  assert.equal(g.text, BOB);
  assert.ok(t.key(bob).length && !t.key(bob).equals(t.key(alice)));
});

test('two users: alice\'s links reach alice\'s workspace only', async () => {
  const [alice, bob] = t.users;
  const ca = await t.client(alice), cb = await t.client(bob);
  const BOB = `BOB-FILE-${randomBytes(6).toString('hex')}`;
  await runPython(cb, `open('bob-secret.txt','w').write(${JSON.stringify(BOB)})`);
  const up = await uploadLink(ca);
  const w = await workspaceLink(ca);
  const U = splitLink(up.url), W = splitLink(w.url);
  // Nothing of bob's comes out through alice's upload or workspace links.
  for (const path of [`/up/${U.token}/../bob-secret.txt`, `/ws/${U.token}/file/bob-secret.txt`,
    `/ws/${W.token}/file/bob-secret.txt`, `/ws/${W.token}/file/..%2f..%2fbob-secret.txt`,
    `/ws/${W.token}/file/%2e%2e/bob-secret.txt`, `/ws/${W.token}/view/bob-secret.txt`]) {
    const r = await get(`${U.origin}${path}`);
    assert.ok(r.status >= 400, `${path}: ${r.status}`);
    assert.ok(!r.text.includes(BOB), `${path} gave bob's file`);
  }
  const page = await get(w.url);
  assert.doesNotMatch(page.text, /bob-secret/);
  // An upload through alice's link lands in alice's volume, not bob's.
  const name = `from-alice-${randomBytes(3).toString('hex')}.txt`;
  const r = await upload(up.url, [{ name, data: 'hello' }]);
  assert.equal(r.status, 200, r.text);
  assert.ok(existsSync(join(t.ws(alice), name)));
  assert.ok(!existsSync(join(t.ws(bob), name)));
  // Bob's upload token re-labelled for alice with bob's key: refused.
  const ub = await uploadLink(cb);
  const tb = parseToken(splitLink(ub.url).token);
  const relabel = mint(t.key(bob), { ...tb, user: alice });
  const x = await upload(`${U.origin}/up/${relabel}`, [{ name: 'relabel.txt', data: 'x' }]);
  assert.equal(x.status, 403, x.text);
  assert.ok(!existsSync(join(t.ws(alice), 'relabel.txt')) && !existsSync(join(t.ws(bob), 'relabel.txt')));
});

// A supervisor whose Podman is nowhere: what a link holder's page says
// (no host path) and what the log says (the socket, for the operator).
test('Podman unreachable: the link page names no host path, the log does', async () => {
  const state = `/run/vsv-${TAG}-nopodman`;
  const sock = `${state}/nowhere/podman.sock`;
  mkdirSync(state, { recursive: true });
  const sv = await startSupervisor({ podmanSock: sock, state });
  try {
    const u = user('nopodman');
    const key = userKey(readMasterKey(join(state, 'link.key')), u);
    const tok = mint(key, { purpose: 'w', user: u, expiry: now() + 600 });
    for (const path of [`/ws/${tok}`, `/ws/${tok}/file/a.txt`]) {
      const r = await get(`${sv.base}${path}`);
      assert.equal(r.status, 503, r.text);
      assert.match(r.text, /not available right now/);
      assert.ok(!r.text.includes(state) && !/podman|\.sock|\/run\//i.test(r.text), r.text);
    }
    const up = await upload(`${sv.base}/ws/${tok}`, [{ name: 'x.txt', data: 'x' }]);
    assert.equal(up.status, 503, up.text);
    assert.ok(!up.text.includes(state), up.text);
    for (let i = 0; i < 100 && !sv.stderr().includes(sock); i++) await sleep(50);
    assert.match(sv.stderr(), new RegExp(`file link for user ${u}: the sandbox could not be started: .*${sock}`));
  } finally {
    await sv.stop();
    rmSync(state, { recursive: true, force: true });
  }
});

bigScenarios(env);

test('a download is sent from the file the agent handed over, and the log says so', async () => {
  const u = t.users[0];
  const c = await t.client(u);
  await runPython(c, "open('handed.txt','w').write('HANDED OVER')");
  const s = await shareFile(c, 'handed.txt');
  const r = await get(s.url);
  assert.equal(r.status, 200);
  assert.equal(r.text, 'HANDED OVER');
  await sleep(200);
  assert.match(t.logs(), new RegExp(`download of handed\\.txt for user ${u} \\(11 bytes, sent from the file\\)`));
});

// The supervisor writes an upload into the file the agent handed over
// (docs/agent.md, "Files by descriptor"): on the user's own filesystem,
// whose quota holds for it as for the sandbox (no blocks kept for root).
test('an upload larger than the workspace quota: 507 saying so, nothing left, the space given back', async () => {
  const u = user('quota');
  t = await t.restart(`users:\n  ${u}:\n    workspace: 16m`);
  const up = await uploadLink(await t.client(u));
  const ws = t.ws(u);
  const before = listTree(ws);
  const free = freeBytes(ws);
  const { body, contentType } = multipart([{ name: 'over-quota.bin', data: randomBytes(40 * MiB) }]);
  const res = await fetch(up.url, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await res.text();
  assert.equal(res.status, 507, text.slice(0, 300));
  assert.match(text.replace(/<[^>]*>/g, ' '), /workspace is full/, text.slice(0, 500));
  await sleep(500);
  // (The directories uploads are received in may stay, empty.)
  const files = (l) => l.filter((x) => x !== '.vivarium/' && x !== '.vivarium/uploading/');
  assert.deepEqual(files(listTree(ws)), files(before), 'nothing left of it');
  assert.ok(freeBytes(ws) >= free - MiB, `the space was given back: ${mb(freeBytes(ws))} free, ${mb(free)} before`);
  const r = await upload(up.url, [{ name: 'small.txt', data: 'fits' }]);
  assert.equal(r.status, 200, r.text);
});

// Last: the supervisor again with a small upload cap (same sandboxes).
test('restart the supervisor with links.upload_max: 1m', async () => {
  t = await t.restart('links:\n  upload_max: 1m');
});
capScenario(env, MiB);
keyScenarios(env, (n) => { t = n; }, (x, o) => x.restart(undefined, o));
