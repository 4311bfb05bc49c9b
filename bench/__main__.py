"""The benchmark suites, each one command through this harness:

    python -m bench --list                          # the suites and what each measures
    python -m bench SUITE [ARGS...]                 # run one; `python -m bench SUITE --help` lists its ARGS
    python -m bench SUITE --baseline REV [ARGS...]  # beside the git revision REV, measured in the same run

Every suite prints its figures beside a baseline measured in the same run (another checkout, a naive method or
``python -c pass``). ``--baseline REV`` is given to a suite that compares checkouts in the form it takes: as
``--baseline-rev REV``, or as ``--baseline-src DIR`` with REV unpacked into a temporary folder. The data sets the
suites read are found as :mod:`bench.data` says (``KBINDEX_BENCH_DATA``, else ``../shared/data``).
"""

from __future__ import annotations

import ast
import runpy
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
#: Modules of bench/ that are helpers or data tools, not suites.
NOT_SUITES = frozenset({"__init__", "__main__", "cranfield", "data", "revision", "scale_corpus", "stress_common",
                        "synth_kb", "smart_collection", "minilm_golden", "foundation_helpers"})


def suites() -> dict[str, str]:
    """``{suite: the first line of its docstring}`` for every runnable suite module of bench/."""
    out = {}
    for path in sorted(BENCH.glob("*.py")):
        name = path.stem
        source = path.read_text(encoding="utf-8")
        if name in NOT_SUITES or 'if __name__ == "__main__"' not in source:
            continue
        doc = ast.get_docstring(ast.parse(source)) or ""
        out[name] = " ".join(doc.split("\n\n")[0].split()).rstrip(":")
    return out


def baseline_flag(suite: str) -> str | None:
    """How ``suite`` takes another checkout: ``--baseline-rev``, ``--baseline-src`` or None (it does not)."""
    source = (BENCH / f"{suite}.py").read_text(encoding="utf-8")
    for flag in ("--baseline-rev", "--baseline-src"):
        if f'"{flag}"' in source:
            return flag
    return None


def main(argv: list[str]) -> int:
    known = suites()
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "--list":
        width = max(map(len, known))
        for name, what in known.items():
            print(f"{name:<{width}}  {what}")
        return 0
    suite, args = argv[0], argv[1:]
    if suite not in known:
        print(f"unknown suite {suite!r}; `python -m bench --list` shows them", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kbindex-bench-") as work:
        if "--baseline" in args:
            at = args.index("--baseline")
            if at + 1 >= len(args):
                print("--baseline needs a git revision", file=sys.stderr)
                return 2
            rev, flag = args[at + 1], baseline_flag(suite)
            if flag is None:
                print(f"{suite} does not compare checkouts: it has no --baseline", file=sys.stderr)
                return 2
            if flag == "--baseline-src":
                from bench.revision import checkout

                rev = str(checkout(rev, Path(work)))
            args = [*args[:at], flag, rev, *args[at + 2:]]
        sys.argv = [str(BENCH / f"{suite}.py"), *args]
        sys.path.insert(0, str(REPO))
        runpy.run_path(sys.argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
