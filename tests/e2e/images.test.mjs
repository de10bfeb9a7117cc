// What the model sees through LibreChat (issue 14), end to end with the MCP
// SDK client: the figures (bench/images/figures.py) come back
// within the per-image and per-result budgets with every shrink or omission
// named in the text, a failed run says so on its first line, the footer
// puts the DataFrame first, and the chart helpers describe what they drew.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startAgent, textOf, repoRoot } from './harness.mjs';

const python = process.env.VIVARIUM_PYTHON || 'python3';
const hasStack = (() => {
  try { execFileSync(python, ['-c', 'import matplotlib, pandas, PIL'], { stdio: 'ignore' }); return true; } catch { return false; }
})();
const skip = !hasStack && 'matplotlib, pandas or PIL is not installed';

const PER_IMAGE = 25600;
const PER_RESULT = 102400;
// LibreChat refuses a response over 16 MiB; ours stays under 8 MiB.
const RESULT_MAX = 8 * 1024 * 1024;

// The raw result, not the core's runPython (which adds .text): a test
// measures it whole.
const run = (client, code, extra = {}) =>
  client.callTool({ name: 'run_python', arguments: { code, ...extra } }, undefined, { timeout: 120000 });

function images(r) { return r.content.filter((c) => c.type === 'image'); }

function pngInfo(b64) {
  const buf = Buffer.from(b64, 'base64');
  assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'image data is a PNG');
  return { bytes: buf.length, width: buf.readUInt32BE(16), height: buf.readUInt32BE(20), colorType: buf[25] };
}

// Code that draws the named figures with the bench's own drawing code.
const draw = (...names) => [
  'import sys',
  `sys.path.insert(0, ${JSON.stringify(join(repoRoot, 'bench', 'images'))})`,
  'import figures',
  ...names.map((n) => `figures.FIGURES[${JSON.stringify(n)}](${JSON.stringify(n)})`),
  'print("drawn")',
].join('\n');

describe('what the model sees', { skip }, () => {
  let agent;
  let client;

  before(async () => {
    agent = await startAgent({ env: { VIVARIUM_MAX_TIMEOUT: '120' } });
    client = await agent.connect();
  });
  after(async () => {
    assert.equal(await agent.stop(), 0, agent.stderr());
  });

  test('the default chart: a palette PNG at its own size, within budget', async () => {
    const r = await run(client, draw('chart.png'));
    assert.equal(r.isError, false, textOf(r));
    const [img] = images(r);
    const info = pngInfo(img.data);
    assert.equal(info.width, 960);
    assert.equal(info.height, 540);
    assert.equal(info.colorType, 3, 'a palette PNG');
    assert.ok(info.bytes <= PER_IMAGE, `${info.bytes} bytes`);
    // human_size's format, as list_files and the footer say sizes.
    const kb = (info.bytes / 1024).toFixed(1);
    assert.ok(textOf(r).includes(`image: chart.png (960x540, ${kb} KB)\n`), textOf(r));
  });

  test('a 3000x1500 scatter: shrunk, and the text says to what', async () => {
    const r = await run(client, draw('scatter3000.png'));
    assert.equal(r.isError, false, textOf(r));
    const [img] = images(r);
    const info = pngInfo(img.data);
    assert.ok(info.bytes <= PER_IMAGE, `${info.bytes} bytes`);
    assert.ok(info.width < 1280);
    assert.ok(textOf(r).includes(`image: scatter3000.png (3000x1500, shrunk to ${info.width}x${info.height} to fit 25.0 KB, `), textOf(r));
  });

  test('four 1280x1280 noise images and a gradient: each and all within budget, in the order written', async () => {
    const r = await run(client, draw('gradient.png', 'noise1.png', 'noise2.png', 'noise3.png', 'noise4.png'));
    assert.equal(r.isError, false, textOf(r));
    const t = textOf(r);
    const imgs = images(r);
    assert.equal(imgs.length, 4);
    let total = 0;
    const infos = imgs.map((i) => pngInfo(i.data));
    for (const info of infos) {
      assert.ok(info.bytes <= PER_IMAGE, `${info.bytes} bytes`);
      total += info.bytes;
    }
    assert.ok(total <= PER_RESULT, `${total} bytes in all`);
    // The first four, in the order they were drawn; the last named.
    ['gradient.png', 'noise1.png', 'noise2.png', 'noise3.png'].forEach((name, i) => {
      const { width, height } = infos[i];
      const line = `image ${i + 1} of 4: ${name} (${name === 'gradient.png' ? '1280x1024' : '1280x1280'}, shrunk to ${width}x${height} to fit`;
      assert.ok(t.includes(line), `no "${line}" in:\n${t}`);
    });
    assert.match(t, /The 4 images are attached after this text in that order\.\n/);
    assert.match(t, /1 more new or changed PNG file\(s\) not shown \(at most 4 images per call\): noise4\.png \([\d.]+ MB\); they are in the workspace: show one in a later call, or share_file\(path\) gives the user a link\./);
    const whole = JSON.stringify(r);
    assert.ok(whole.length < RESULT_MAX, `${whole.length} bytes`);
  });

  test('an image that cannot fit is left out and named', async () => {
    const small = await startAgent({ env: { VIVARIUM_MAX_IMAGE_BYTES: '1024', VIVARIUM_MAX_RESULT_IMAGE_BYTES: '1024' } });
    try {
      const c = await small.connect();
      const r = await run(c, draw('noise1.png'));
      assert.equal(r.isError, false, textOf(r));
      assert.equal(images(r).length, 0);
      assert.match(textOf(r), /image left out: noise1\.png \(1280x1280\): still \d+\.\d KB at 48x48, over the 1.0 KB it could have; the file is in the workspace at full size\./);
    } finally {
      await small.stop();
    }
  });

  test('a failed run starts with the error', async () => {
    const r = await run(client, 'd = {"present": 1}\nprint("looking")\nd["missing"]\n');
    assert.equal(r.isError, true);
    const t = textOf(r);
    assert.ok(t.startsWith("error: KeyError: 'missing' (exit code 1)\n"), t);
    assert.ok(t.indexOf('Traceback') > t.indexOf('looking'));
  });

  test('the footer puts the DataFrame before a loop\'s leftovers', async () => {
    const r = await run(client, [
      'import pandas as pd',
      'sales = pd.DataFrame({"q": range(8), "eur": range(8)})',
      'for i in range(300):',
      '    globals()["v%d" % i] = i',
    ].join('\n'), { fresh: true });
    assert.equal(r.isError, false, textOf(r));
    const vars = textOf(r).split('\n').find((l) => l.startsWith('vars: '));
    assert.ok(vars.startsWith('vars: sales 8x2 [q, eur]  '), vars);
    assert.match(vars, / … \d+ more$/);
  });

  test('the chart helpers describe what they drew, numbers from the data', async () => {
    const r = await run(client, [
      'import pandas as pd',
      'from vivarium_charts import line_chart, bar_chart',
      'df = pd.DataFrame({"year": [2021, 2019, 2020], "DE": [3.5, 1.25, 2.0], "FR": [1.0, 2.0, None]})',
      'line_chart(df, x="year", title="Growth")',
      'bar_chart(df, x="year", y="DE", title="Growth bars")',
    ].join('\n'));
    assert.equal(r.isError, false, textOf(r));
    const t = textOf(r);
    assert.ok(t.includes('chart growth.png: line chart "Growth"; x (year): 2019 to 2021; '
      + 'DE: 3 points, first 1.25, last 3.5, min 1.25, max 3.5; FR: 2 points, first 2, last 1, min 1, max 2\n'), t);
    assert.ok(t.includes('chart growth_bars.png: bar chart "Growth bars"; x: 3 categories, \'2021\' to \'2020\'; '
      + 'DE: 3 points, first 3.5, last 2, min 1.25, max 3.5\n'), t);
    // Two images, attached in the order the lines above name them.
    assert.match(t, /image 1 of 2: growth\.png .*\nimage 2 of 2: growth_bars\.png /);
  });
});
