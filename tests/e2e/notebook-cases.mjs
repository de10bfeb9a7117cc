// notebook-cases.mjs: what a model trained on notebooks does every day, and
// what it must get back -- never a run that silently shows nothing.  Driven
// by the official MCP SDK client.  The same cases run against the agent
// directly (tests/e2e/notebook.test.mjs, Debian 12's Python and pandas 1.5)
// and through the supervisor with real Podman and the sandbox image
// (tests/supervisor/notebook.test.mjs, trixie's pandas 2.x).
//
//   defineNotebookTests(test, {
//     connect,       // async () => a connected SDK Client on the workspace
//     connectOther,  // async () => a client on another, idle workspace
//     maxImages,     // the server's VIVARIUM_MAX_IMAGES (4 by default)
//     label,         // prefix for the test names
//   });
import assert from 'node:assert/strict';
import { sleep, textOf } from './harness.mjs';

const LONG = { timeout: 180000 };

export function defineNotebookTests(test, { connect, connectOther, maxImages = 4, label }) {
  let c;
  async function client() {
    if (!c) {
      c = await connect();
      await c.listTools();      // so the SDK checks structuredContent too
    }
    return c;
  }
  async function run(code, extra = {}) {
    const cl = await client();
    return cl.callTool({ name: 'run_python', arguments: { code, ...extra } }, undefined, LONG);
  }
  // The stdout section of a result's text.
  function stdoutOf(t) {
    const m = t.match(/--- stdout ---\n([\s\S]*?)(?=\n--- (?:stderr|state) ---|\nimage|$)/);
    return m ? m[1] : '';
  }

  // Started first, collected last: a background job given no timeout runs
  // past the foreground's 60 s default, in a workspace of its own.
  let longJob = null;
  let other = null;
  test(`${label}: a background job without timeout_seconds gets the limit, not 60 s (started)`, async () => {
    other = await connectOther();
    const r = await other.callTool({ name: 'run_python', arguments: {
      code: 'import time\nprint("long job started")\ntime.sleep(63)\nprint("past sixty")', background: true } });
    assert.equal(r.structuredContent.state, 'running');
    assert.doesNotMatch(textOf(r), /stopped after 60 s/);
    longJob = r.structuredContent.job_id;
  });

  test(`${label}: a bare last expression is shown, as in a notebook`, async () => {
    let r = await run('x = 6 * 7\nx');
    assert.equal(r.isError, false);
    assert.equal(stdoutOf(textOf(r)).trim(), '42');

    r = await run('import pandas as pd\npd.DataFrame({"alpha": [1, 2], "beta": ["x", "y"]})');
    let out = stdoutOf(textOf(r));
    assert.match(out, /alpha\s+beta/);
    assert.match(out, /1\s+2\s+y/);

    r = await run('print("before")\n"z" * 100000');
    out = stdoutOf(textOf(r));
    assert.ok(out.startsWith('before\n'), out.slice(0, 80));
    assert.match(out, /100,002 characters/);
    assert.ok(out.length < 12000, `a clipped repr, got ${out.length} characters`);

    // Nothing to show: None, an assignment, a trailing semicolon.
    for (const code of ['None', 'q = 5', '6 * 7;', 'def f():\n    return 1']) {
      r = await run(code);
      assert.match(textOf(r), /\(no output\)/, code);
    }
    // The namespace is not changed by it: no "_" appears.
    r = await run('print("_" in globals())');
    assert.equal(stdoutOf(textOf(r)).trim(), 'False');
  });

  test(`${label}: plt.show() and a figure left open come back as images`, async () => {
    let r = await run('import matplotlib.pyplot as plt\n'
      + 'plt.plot([1, 2, 3])\nplt.show()\n'
      + 'plt.bar(["a", "b"], [3, 4])\nplt.show()');
    let t = textOf(r);
    assert.equal(r.isError, false, t);
    assert.equal(r.content.filter((x) => x.type === 'image').length, 2, t);
    assert.equal(r.structuredContent.images.length, 2);
    for (const im of r.structuredContent.images) assert.match(im.name, /^figure-\d+\.png$/);
    assert.equal((t.match(/saved by vivarium for plt\.show\(\)/g) || []).length, 2, t);

    r = await run('import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([3, 1, 2])');
    t = textOf(r);
    assert.equal(r.content.filter((x) => x.type === 'image').length, 1, t);
    assert.match(t, /a figure left open, saved by vivarium/);
    // Saved in the workspace, where share_file finds it.
    assert.match(r.structuredContent.files_written.join(' '), /figure-\d+\.png/);
  });

  test(`${label}: a .jpg and an .svg chart are named, with their sizes and share_file`, async () => {
    const r = await run('import matplotlib.pyplot as plt\nplt.plot([1, 2])\n'
      + 'plt.savefig("chart-n.jpg")\nplt.savefig("chart-n.svg")\nplt.close("all")');
    const t = textOf(r);
    assert.equal(r.isError, false, t);
    assert.match(t, /not shown, only PNG files come back as images: chart-n\.jpg \([\d.]+ [KM]?B\), chart-n\.svg \([\d.]+ [KM]?B\)/);
    assert.match(t, /share_file\(path\)/);
  });

  test(`${label}: a run that times out returns what it printed`, async () => {
    const r = await run('import time\nfor i in range(100):\n    print("line", i)\n    time.sleep(0.2)',
      { timeout_seconds: 2 });
    const t = textOf(r);
    assert.equal(r.isError, true);
    assert.match(t.split('\n')[0], /^error: Timed out after 2 s/);
    assert.match(t, /line 0\n/);
    assert.match(t, /line 5\n/);
    assert.doesNotMatch(t, /flush=True/);
  });

  test(`${label}: more PNGs than the limit: the first ones come back, the rest are named`, async () => {
    const names = Array.from({ length: maxImages + 1 }, (_, i) => `many-${String.fromCharCode(97 + i)}.png`);
    const r = await run('import matplotlib.pyplot as plt\n'
      + `for n in ${JSON.stringify(names)}:\n`
      + '    plt.figure(figsize=(2, 2))\n    plt.plot([1, 2])\n    plt.savefig(n)\n    plt.close()');
    const t = textOf(r);
    assert.deepEqual(r.structuredContent.images.map((i) => i.name), names.slice(0, maxImages), t);
    assert.match(t, new RegExp(`1 more new or changed PNG file\\(s\\) not shown .*${names[maxImages]} \\(`));
  });

  test(`${label}: a huge output keeps its head and its tail`, async () => {
    const r = await run('print("FIRST LINE")\nfor i in range(20000):\n    print("x" * 50)\nprint("LAST LINE")');
    const t = textOf(r);
    assert.match(t, /--- stdout ---\nFIRST LINE\n/);
    assert.match(t, /characters cut here, from the middle of stdout/);
    assert.match(t, /LAST LINE\n/);
    assert.ok(t.length < 40000, `bounded: ${t.length}`);
  });

  test(`${label}: a KeyError on a column lists the frame's columns`, async () => {
    const cols = ['Region', 'Units_Sold', 'Unit_Price', 'Order_Date', 'Customer', 'Channel', 'Discount', 'Notes'];
    let r = await run(`import pandas as pd\ndf = pd.DataFrame({c: [1] for c in ${JSON.stringify(cols)}})\ndf["Reigon"].sum()`);
    let t = textOf(r);
    assert.equal(r.isError, true);
    assert.match(t, /^error: KeyError/);
    const line = t.split('\n').find((l) => /^columns of df\b/.test(l));
    assert.ok(line, `no 'columns of df' line in:\n${t}`);
    for (const col of cols) assert.ok(line.includes(col), `${col} in ${line}`);
    assert.match(t, /closest to 'Reigon': 'Region'/);

    r = await run('df.Custmer.nunique()');
    t = textOf(r);
    assert.match(t, /^error: AttributeError/);
    assert.match(t, /columns of df\b.*Customer/);
  });

  test(`${label}: workspace files never shadow modules; the model's own helpers.py imports`, async () => {
    const planted = ['vivarium_charts.py', 'wave.py', 'sitecustomize.py', 'pandas.py'];
    let r = await run('import pandas as pd\nplanted_df = pd.DataFrame({"k": ["a", "b"], "v": [1, 2]})\n'
      + `for n in ${JSON.stringify(planted)}:\n`
      + '    open(n, "w").write("open(\'SHADOWED-%s\' % __name__, \'w\').write(\'ran\')\\n")\n'
      + 'open("helpers.py", "w").write("def triple(x):\\n    return 3 * x\\n")');
    assert.equal(r.isError, false, textOf(r));
    try {
      // The next run restores the namespace (pandas, a frame), draws with
      // the chart helpers and imports wave: none of the planted files runs.
      r = await run('import os, wave\nfrom vivarium_charts import bar_chart\n'
        + 'bar_chart(planted_df, x="k", y="v")\n'
        + 'import helpers\nprint("triple", helpers.triple(4))\n'
        + 'print("shadowed", sorted(f for f in os.listdir(".") if f.startswith("SHADOWED-")))');
      const t = textOf(r);
      assert.equal(r.isError, false, t);
      assert.match(t, /triple 12\n/);
      assert.match(t, /shadowed \[\]\n/);
    } finally {
      await run(`import os\nfor n in ${JSON.stringify([...planted, 'helpers.py'])}:\n    os.remove(n)\n`
        + 'for n in os.listdir("."):\n    if n.startswith("SHADOWED-"): os.remove(n)\n'
        + 'del planted_df\nimport sys\nsys.modules.pop("helpers", None)');
    }
  });

  test(`${label}: clean_numeric and a chart leave text columns and the caller's frame alone`, async () => {
    let r = await run('import pandas as pd, numpy as np\n'
      + 'sales = pd.DataFrame({"region": ["north", None, "south", np.nan], "units": ["1", "NA", "3", ":"]})\n'
      + 'regions = pd.DataFrame({"region": ["north", "south", None], "units": [1, 2, 3]})');
    assert.equal(r.isError, false, textOf(r));
    // A second call: the frame comes back from the namespace store.
    r = await run('from vivarium_charts import clean_numeric, bar_chart\n'
      + 'clean = clean_numeric(sales)\n'
      + 'print("nan strings", int((clean["region"].astype(object) == "nan").sum()))\n'
      + 'print("missing", int(clean["region"].isna().sum()))\n'
      + 'print("units", clean["units"].tolist())\n'
      + 'bar_chart(regions, x="region", y="units")\n'
      + 'print("chart frame", regions["region"].tolist()[:2], int(regions["region"].isna().sum()))\n'
      + 'print("caller", sales["units"].tolist(), int(sales["region"].isna().sum()),'
      + ' int((sales["region"].astype(object) == "nan").sum()))\n'
      + 'clean.to_csv("clean.csv", index=False)\nprint("csv nan", open("clean.csv").read().count("nan"))');
    const t = textOf(r);
    assert.equal(r.isError, false, t);
    assert.match(t, /nan strings 0\n/);
    assert.match(t, /missing 2\n/);
    assert.match(t, /units \[1\.0, nan, 3\.0, nan\]\n/);
    assert.match(t, /caller \['1', 'NA', '3', ':'\] 2 0\n/);
    assert.match(t, /chart frame \['north', 'south'\] 1\n/);
    assert.match(t, /csv nan 0\n/);
  });

  test(`${label}: job_status shows a running job's output as it is printed`, async () => {
    const cl = await client();
    const r = await cl.callTool({ name: 'run_python', arguments: {
      code: 'import time\nprint("step one")\ntime.sleep(30)', background: true } });
    const id = r.structuredContent.job_id;
    try {
      let t = '';
      for (let i = 0; i < 20 && !/step one/.test(t); i++) {
        await sleep(250);
        t = textOf(await cl.callTool({ name: 'job_status', arguments: { job_id: id } }));
      }
      assert.match(t, /still running/);
      assert.match(t, /step one/);
      assert.doesNotMatch(t, /printed nothing yet/);

      // Meanwhile a foreground call answers at once, naming the job.
      const t0 = Date.now();
      const busy = await cl.callTool({ name: 'run_python', arguments: { code: 'print("quick")' } });
      const ms = Date.now() - t0;
      const bt = textOf(busy);
      assert.ok(ms < 5000, `answered in ${ms} ms`);
      assert.equal(busy.isError, true);
      assert.match(bt, new RegExp(`^error: background job ${id} has been running for \\d+ s`));
      assert.match(bt, /It printed last: step one/);
      assert.match(bt, new RegExp(`job_status\\(job_id="${id}", stop=true\\)`));
      assert.doesNotMatch(bt, /quick/);
    } finally {
      await cl.callTool({ name: 'job_status', arguments: { job_id: id, stop: true } });
    }
    // Once the job is gone, runs run again.
    const after = await run('print("quick")');
    assert.equal(after.isError, false, textOf(after));
  });

  test(`${label}: a background job without timeout_seconds gets the limit, not 60 s (collected)`, LONG, async () => {
    assert.ok(longJob, 'the job was started');
    let r;
    for (let i = 0; i < 4; i++) {
      r = await other.callTool({ name: 'job_status', arguments: { job_id: longJob, wait_seconds: 50 } },
        undefined, LONG);
      if (r.structuredContent.state === 'done') break;
    }
    const t = textOf(r);
    assert.equal(r.structuredContent.state, 'done', t);
    assert.equal(r.structuredContent.timed_out, false, t);
    assert.equal(r.structuredContent.exit_code, 0, t);
    assert.match(t, /past sixty/);
    assert.ok(r.structuredContent.elapsed_seconds > 60, `${r.structuredContent.elapsed_seconds} s`);
  });

  test(`${label}: the schema says the timeout's limit`, async () => {
    const cl = await client();
    const tools = (await cl.listTools()).tools;
    const rp = tools.find((t) => t.name === 'run_python');
    const ts = rp.inputSchema.properties.timeout_seconds;
    assert.equal(typeof ts.maximum, 'number');
    assert.ok(ts.maximum >= 60);
    assert.equal(ts.default, 60);
    assert.match(rp.description, /last line is\s+shown/);
    assert.equal(tools.length, 7);
  });
}
