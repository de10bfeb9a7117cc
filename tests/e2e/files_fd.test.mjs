// files_fd.test.mjs: files by descriptor, the agent's side (docs/agent.md,
// "Files by descriptor").  On its unix socket the agent hands the open
// file over (one NUL byte carrying it) and answers with its size, and an
// upload's temporary file the same way; fdclient.py plays the supervisor
// (recvmsg, then writes into the file and says the size).  Checked: the
// answers, the path rules on the way in, and that an upload whose
// descriptor is never taken, whose size is wrong or over the limit leaves
// nothing behind.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, symlinkSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, sleep } from './harness.mjs';

const python = process.env.VIVARIUM_PYTHON || 'python3';
const client = join(import.meta.dirname, 'fdclient.py');

// One exchange as the supervisor has it: see fdclient.py.
function exchange(sock, head, { write = null, zeros = 0, tail = null, drop = false } = {}) {
  const args = [client, sock, head];
  if (write !== null) args.push('--write', write);
  if (zeros) args.push('--zeros', String(zeros));
  if (tail !== null) args.push('--tail', tail);
  if (drop) args.push('--drop');
  const out = JSON.parse(execFileSync(python, args, { timeout: 20000 }).toString());
  if (out.answer !== undefined) {
    const [h, ...rest] = out.answer.split('\r\n\r\n');
    out.status = Number(h.split(' ')[1]);
    out.head = h;
    out.body = rest.join('\r\n\r\n');
  }
  return out;
}

const chunked = (s) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n0\r\n\r\n`;

describe('files by descriptor on the unix socket', () => {
  let agent, ws, up;
  before(async () => {
    agent = await startAgent({ transport: 'unix', env: { VIVARIUM_WARM: '0', VIVARIUM_UPLOAD_MAX_BYTES: '1m' } });
    ws = agent.workspace;
    up = join(ws, '.vivarium', 'uploading');
    writeFileSync(join(ws, 'a.txt'), 'hello');
    symlinkSync('a.txt', join(ws, 'link.txt'));
  });
  after(async () => { await agent?.stop(); });

  const parts = () => (existsSync(up) ? readdirSync(up) : []);
  const head = (line, extra = '') => `${line} HTTP/1.1\r\nHost: sandbox\r\n${extra}\r\n`;

  test('a download: the file handed over, read-only, its size said; without fd=1, the bytes', () => {
    let r = exchange(agent.socketPath, head('GET /_files/raw?path=a.txt&fd=1'));
    assert.ok(r.mark, 'the NUL byte that carries the file comes first');
    assert.deepEqual(r.file, { size: 5, regular: true, mode: 'r', text: 'hello' });
    assert.equal(r.status, 200, r.answer);
    assert.deepEqual(JSON.parse(r.body), { size: 5 });
    r = exchange(agent.socketPath, head('GET /_files/raw?path=a.txt'));
    assert.ok(!r.mark);
    assert.equal(r.status, 200, r.answer);
    assert.equal(r.body, 'hello');
  });

  test('a download by descriptor keeps the path rules: nothing handed over', () => {
    for (const [p, st] of [['link.txt', 403], ['../etc/passwd', 403], ['.vivarium/x', 403], ['missing.txt', 404]]) {
      const r = exchange(agent.socketPath, head(`GET /_files/raw?path=${encodeURIComponent(p)}&fd=1`));
      assert.ok(!r.mark, `${p}: nothing handed over`);
      assert.equal(r.status, st, `${p}: ${r.answer}`);
    }
  });

  const receive = (name) => head(`POST /_files/receive?name=${encodeURIComponent(name)}`,
    'Transfer-Encoding: chunked\r\nConnection: close\r\n');

  test('an upload: written into the file handed over (empty, write-only), its size said after keep-alive spaces, renamed into place', () => {
    const r = exchange(agent.socketPath, receive('../up.csv'), { write: 'a,b\n1,2\n', tail: `1\r\n \r\n2\r\n  \r\n${chunked('8')}` });
    assert.ok(r.mark);
    assert.deepEqual(r.file, { size: 0, regular: true, mode: 'w' });
    assert.equal(r.status, 201, r.answer);
    const j = JSON.parse(r.body);
    assert.equal(j.path, 'up.csv');
    assert.equal(j.size, 8);
    assert.equal(readFileSync(join(ws, 'up.csv'), 'utf8'), 'a,b\n1,2\n');
    assert.deepEqual(parts(), []);
  });

  test('a descriptor never taken: the connection closes, nothing is left', async () => {
    exchange(agent.socketPath, receive('never.csv'), { drop: true });
    for (let i = 0; i < 50 && parts().length > 0; i++) await sleep(100);
    assert.deepEqual(parts(), []);
    assert.ok(!existsSync(join(ws, 'never.csv')));
  });

  test('a wrong size, no size, a size over the limit: refused, nothing left', () => {
    const big = 2 * 1024 * 1024;
    const cases = [
      ['wrong.csv', { write: 'abc' }, chunked('4'), 400],
      ['nosize.csv', { write: 'abc' }, '0\r\n\r\n', 400],
      ['junk.csv', { write: 'abc' }, chunked('3x'), 400],
      ['big.bin', { zeros: big }, chunked(String(big)), 413],
    ];
    for (const [name, what, tail, st] of cases) {
      const r = exchange(agent.socketPath, receive(name), { ...what, tail });
      assert.ok(r.mark, name);
      assert.equal(r.status, st, `${name}: ${r.answer}`);
      assert.ok(!existsSync(join(ws, name)), `${name} is not in the workspace`);
      assert.deepEqual(parts(), [], `${name}: no temporary file left`);
    }
  });
});
