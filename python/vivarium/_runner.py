"""Minimal runner: runs $VIVARIUM_RUN_DIR/code.py and writes report.json.

See docs/runner-contract.md.  The namespace store and the footer are added
by the Python issue; this version keeps the contract only.
"""
import json
import os
import sys
import traceback


def _write_report(run_dir, report):
    tmp = os.path.join(run_dir, "report.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(report, f)
    os.replace(tmp, os.path.join(run_dir, "report.json"))


def main():
    run_dir = os.environ["VIVARIUM_RUN_DIR"]
    with open(os.path.join(run_dir, "code.py"), encoding="utf-8") as f:
        source = f.read()
    sys.path.insert(0, os.getcwd())
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    status = 0
    try:
        exec(compile(source, "<run_python>", "exec"), ns)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    _write_report(run_dir, {"version": 1, "exit_code": status, "footer": None})
    return status


if __name__ == "__main__":
    sys.exit(main())
