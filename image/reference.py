#!/usr/bin/env python3
"""image/reference.py: the reference's package list against the image.

    image/reference.py check             image/reference.txt agrees with
                                         image/packages.txt and the locks
    image/reference.py table             print the table of docs/image.md
    image/reference.py table --write F   put it into F between the markers
    image/reference.py table --diff F    exit 1 if F's table is not current
    image/reference.py expect SUITE      JSON for tests/image/client.mjs:
                                         what must import in SUITE's image,
                                         what must not, and the stand-ins

One data file (image/reference.txt, format at its top) drives the docs
table and the import test, so the two cannot drift apart; `check` makes
sure every Debian package it names is really in that flavour's list.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = ("trixie", "forky")
LOCKS = {"trixie": "runtime.lock", "forky": "runtime.forky.lock"}
BEGIN = "<!-- reference table: image/reference.py table --write docs/image.md -->"
END = "<!-- end of reference table -->"


def lines(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.strip() and not line.lstrip().startswith("#"):
                yield n, line


def reference():
    rows = []
    for n, line in lines("reference.txt"):
        body, _, note = line.partition(" -- ")
        f = body.split()
        if len(f) < 4:
            sys.exit(f"reference.txt:{n}: want NAME IMPORT TRIXIE FORKY [STAND-IN...]")
        rows.append({"name": f[0], "module": f[1], "trixie": f[2], "forky": f[3],
                     "standins": f[4:], "note": note.strip(), "line": n})
    return rows


def packages():
    """{suite: {debian package: import module or None}} of the runtime."""
    out = {s: {} for s in SUITES}
    for _, line in lines("packages.txt"):
        f = line.split()
        stage, _, only = f[0].partition(":")
        if stage != "runtime":
            continue
        for s in SUITES:
            if not only or only == s:
                out[s][f[1]] = f[2] if len(f) > 2 else None
    return out


def lock(suite):
    got = {}
    path = os.path.join(HERE, LOCKS[suite])
    if os.path.exists(path):
        for _, line in lines(LOCKS[suite]):
            name, _, version = line.partition("=")
            got[name] = version
    return got


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pip_extras():
    names = set()
    for _, line in lines("requirements-extra.in"):
        names.add(norm(re.split(r"[<>=!~;\[ ]", line.strip(), maxsplit=1)[0]))
    return names


def check():
    pk, bad = packages(), []
    by_module = {s: {m: p for p, m in pk[s].items() if m} for s in SUITES}
    locks = {s: lock(s) for s in SUITES}
    for r in reference():
        where = f"reference.txt:{r['line']} {r['name']}"
        for s in SUITES:
            deb = r[s]
            if deb == "-":
                if r["module"] in by_module[s]:
                    bad.append(f"{where}: {s} has {by_module[s][r['module']]} for "
                               f"{r['module']}, but the line says -")
            elif pk[s].get(deb) != r["module"]:
                bad.append(f"{where}: image/packages.txt has no `runtime {deb} "
                           f"{r['module']}` for {s}")
            elif deb not in locks[s]:
                bad.append(f"{where}: {deb} is not in image/{LOCKS[s]}: relock")
            for m in r["standins"]:
                if deb == "-" and m not in by_module[s]:
                    bad.append(f"{where}: stand-in {m} is no module of {s}'s packages")
        if r["standins"] and "-" not in (r["trixie"], r["forky"]):
            bad.append(f"{where}: stand-ins for a package both flavours have")
    for b in bad:
        print("reference: " + b, file=sys.stderr)
    return 1 if bad else 0


def cell(r, suite, pk, locks, extras):
    deb = r[suite]
    if deb != "-":
        return f"{suite} {locks[suite].get(deb, '?')}"
    by_module = {m: p for p, m in pk[suite].items() if m}
    parts = []
    if r["standins"]:
        ins = ", ".join(f"`{m}` {locks[suite].get(by_module.get(m), '?')}"
                        for m in r["standins"])
        parts.append(f"stand-in: {ins}")
    parts.append("pip extra" if norm(r["name"]) in extras else "missing")
    return "; ".join(parts)


def table():
    pk, extras = packages(), pip_extras()
    locks = {s: lock(s) for s in SUITES}
    out = [BEGIN,
           "| package | import | default image (trixie) | `SUITE=forky` | note |",
           "|---|---|---|---|---|"]
    for r in reference():
        out.append("| {} | `{}` | {} | {} | {} |".format(
            r["name"], r["module"], cell(r, "trixie", pk, locks, extras),
            cell(r, "forky", pk, locks, extras), r["note"]))
    out.append(END)
    return "\n".join(out) + "\n"


def spliced(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        sys.exit(f"reference: {path} has no table markers ({BEGIN})")
    return text, text[:a] + table() + text[b + len(END) + 1:]


def expect(suite):
    want, absent = [], []
    for r in reference():
        if r[suite] != "-":
            want.append(r["module"])
        else:
            absent.append(r["module"])
            want.extend(m for m in r["standins"] if m not in want)
    return {"suite": suite, "imports": want, "absent": absent}


def main(argv):
    if argv[:1] == ["check"]:
        return check()
    if argv[:1] == ["table"] and len(argv) == 1:
        sys.stdout.write(table())
        return 0
    if argv[:2] == ["table", "--write"] and len(argv) == 3:
        _, new = spliced(argv[2])
        with open(argv[2], "w", encoding="utf-8") as f:
            f.write(new)
        return 0
    if argv[:2] == ["table", "--diff"] and len(argv) == 3:
        old, new = spliced(argv[2])
        if old != new:
            print(f"reference: the table in {argv[2]} is not what image/reference.txt "
                  f"and the locks say: run image/reference.py table --write {argv[2]}",
                  file=sys.stderr)
            return 1
        return 0
    if argv[:1] == ["expect"] and len(argv) == 2 and argv[1] in SUITES:
        json.dump(expect(argv[1]), sys.stdout)
        print()
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
