// The persistent namespace end to end: the real agent, the real runner and
// Debian's pandas, driven by the MCP SDK client as LibreChat would.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startAgent, textOf, runPython as run } from './harness.mjs';

const python = process.env.VIVARIUM_PYTHON || 'python3';
const hasPandas = (() => {
  try { execFileSync(python, ['-c', 'import pandas'], { stdio: 'ignore' }); return true; } catch { return false; }
})();

// The footer's line that starts with `key:` (without the key), or null.
function footerLine(text, key) {
  const at = text.lastIndexOf('--- state ---');
  if (at < 0) return null;
  const line = text.slice(at).split('\n').find((l) => l.startsWith(`${key}:`));
  return line === undefined ? null : line.slice(key.length + 1).trim();
}

describe('namespace across run_python calls', { skip: !hasPandas && 'pandas is not installed for ' + python }, () => {
  let agent;
  let client;

  before(async () => {
    agent = await startAgent({ transport: 'unix', env: { VIVARIUM_MAX_TIMEOUT: '10' } });
    client = await agent.connect();
  });
  after(async () => { await agent.stop(); });

  test('a DataFrame and an alias from one call are there in the next', async () => {
    const first = await run(client,
      "import pandas as pd\ndf = pd.DataFrame({'GBP': [1.5, 2.5], 'USD': [1, 2]})\nprint('made')");
    const t1 = textOf(first);
    assert.equal(first.isError, false, t1);
    assert.match(t1, /made/);
    assert.equal(footerLine(t1, 'namespace'), 'empty (nothing stored yet)', t1);
    assert.match(footerLine(t1, 'vars'), /df 2x2 \[GBP, USD\]/);
    assert.match(footerLine(t1, 'already imported (do not re-import)'), /pd=pandas/);

    // A new MCP session, as LibreChat opens per call: state belongs to the workspace.
    const other = await agent.connect();
    const second = await run(other, "print(df.shape, pd.__name__, df['GBP'].sum())");
    const t2 = textOf(second);
    assert.equal(second.isError, false, t2);
    assert.match(t2, /\(2, 2\) pandas 4\.0/);
    assert.equal(footerLine(t2, 'namespace'), 'restored 2 name(s)', t2);
  });

  test('a timed-out call leaves the stored namespace as it was', async () => {
    const killed = await run(client, 'import time\ndf = None\ntime.sleep(30)', { timeout_seconds: 1 });
    const t = textOf(killed);
    assert.equal(killed.isError, true);
    assert.equal(t.includes('--- state ---'), false, 'a killed run has no footer');
    const after = await run(client, 'print(type(df).__name__)');
    assert.match(textOf(after), /DataFrame/);
  });

  test('fresh=true discards the stored names', async () => {
    const r = await run(client, "print('x' in globals())", { fresh: true });
    const t = textOf(r);
    assert.match(t, /False/);
    assert.match(footerLine(t, 'namespace'), /fresh start, discarded 2 stored name\(s\)/);
  });

  test('list_files does not show the store', async () => {
    const r = await client.callTool({ name: 'list_files', arguments: {} });
    assert.equal(textOf(r).includes('.vivarium'), false, textOf(r));
  });
});
