"""How much of Poplar's, PopLibs' and GCL's public API poplar-py has, by name and by use.

Reads ``benchmarks/data/poplar_api.json`` (made by ``benchmarks/data/make_poplar_api.py``:
every public name of Poplar's documented API, PopLibs' public headers and GCL's documented
functions, with how often public third-party C/C++ code uses it) and looks each name up where
a port of C++ code would: ``poplar::X`` -> ``poplar_py.X``, ``poplar::program::Copy`` ->
``poplar_py.program.Copy``, ``popnn::bn::batchNormalise`` ->
``poplibs_py.popnn.bn.batchNormalise``, ``gcl::X`` -> ``poplibs_py.gcl.X``; a method
``poplar::Graph::addVariable`` is the attribute ``addVariable`` of ``poplar_py.Graph``, an
enumerator ``poplar::TargetType::IPU`` the attribute ``IPU`` of ``poplar_py.TargetType``. A
C++ name that is a Python keyword takes PEP 8's trailing underscore: ``popnn::in::X`` is
``poplibs_py.popnn.in_.X``.

Prints, per library and overall, the names covered out of all names and the use-weighted
share (the uses of covered names out of all uses).  ``--missing [LIB]`` lists the missing
names, most used first; ``--json`` prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import keyword
import os
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "poplar_api.json")
LIBS = ("poplar", "popops", "poplin", "popnn", "poprand", "poputil", "gcl")
_MISSING = object()


def load(path: str = DATA) -> dict:
    with open(path) as f:
        return json.load(f)


def root_module(lib: str):
    return importlib.import_module("poplar_py" if lib == "poplar" else f"poplibs_py.{lib}")


def resolve(qualified: str):
    """The poplar-py object a C++ qualified name maps to, or None."""
    parts = qualified.split("::")
    try:
        obj = root_module(parts[0])
    except ImportError:
        return None
    for part in parts[1:]:
        part = f"{part}_" if keyword.iskeyword(part) else part
        nxt = getattr(obj, part, _MISSING)
        if nxt is _MISSING and isinstance(obj, type(sys)):
            try:
                nxt = importlib.import_module(f"{obj.__name__}.{part}")
            except ImportError:
                nxt = _MISSING
        if nxt is _MISSING:
            return None
        obj = nxt
    return obj


def measure(data: dict) -> dict:
    """{lib: {"names": n, "covered": c, "uses": u, "covered_uses": cu, "missing": [(q, kind, uses)]}}."""
    out = {}
    for lib in LIBS:
        rows = data["libs"].get(lib, [])
        missing = [(q, kind, uses) for q, kind, uses in rows if resolve(q) is None]
        total_uses = sum(u for _, _, u in rows)
        missing_uses = sum(u for _, _, u in missing)
        out[lib] = {
            "names": len(rows),
            "covered": len(rows) - len(missing),
            "uses": total_uses,
            "covered_uses": total_uses - missing_uses,
            "missing": sorted(missing, key=lambda r: (-r[2], r[0])),
        }
    all_rows = [r for lib in LIBS for r in data["libs"].get(lib, [])]
    out["all"] = {
        "names": len(all_rows),
        "covered": sum(out[lib]["covered"] for lib in LIBS),
        "uses": sum(out[lib]["uses"] for lib in LIBS),
        "covered_uses": sum(out[lib]["covered_uses"] for lib in LIBS),
        "missing": sorted((r for lib in LIBS for r in out[lib]["missing"]), key=lambda r: (-r[2], r[0])),
    }
    return out


def share(a: float, b: float) -> float:
    return a / b if b else 1.0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--missing", nargs="?", const="all", choices=(*LIBS, "all"), metavar="LIB",
                    help="list the missing names of LIB (default: all), most used first")
    ap.add_argument("--limit", type=int, default=0, help="with --missing: at most this many")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--data", default=DATA, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    data = load(args.data)
    res = measure(data)
    if args.json:
        print(json.dumps({k: {f: v[f] for f in ("names", "covered", "uses", "covered_uses")}
                          for k, v in res.items()}, indent=1))
        return
    if args.missing:
        rows = res[args.missing]["missing"]
        for q, kind, uses in rows[:args.limit or None]:
            print(f"{uses:8.1f}  {q}  ({kind})")
        return
    print(f"Public names of Poplar's documented API, PopLibs' public headers and GCL, weighted by "
          f"their uses in {data['files']} C/C++ files of {len(data['corpus'])} public repositories")
    print(f"{'library':9} {'names covered':>15} {'share':>6} {'uses covered':>19} {'share':>6}")
    for lib in (*LIBS, "all"):
        r = res[lib]
        print(f"{lib:9} {r['covered']:6d} / {r['names']:<6d} {share(r['covered'], r['names']):6.1%}"
              f" {r['covered_uses']:9.0f} / {r['uses']:<9.0f} {share(r['covered_uses'], r['uses']):6.1%}")


if __name__ == "__main__":
    main()
