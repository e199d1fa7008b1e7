"""Ask the CAS and the rules again, with the units fix of 2026-12-04, about recorded verdicts the old reading may have
got wrong, and append the changed ones to a build's record (a later line of a key wins), so that a rebuild uses them.

Math-Verify stripped trailing single letters as units (t, m, s, ...) from algebraic answers too: a reference such
as `y = \\frac{2}{3} \\cos 16 t - \\frac{1}{4} \\sin 16 t \\mathrm{ft}` read as ... \\sin 16, and the CAS's rendering of that
misread value was recorded as equal to it (experiments/verifyrm/README.md, fixes to the labels). The rule verifier's sandbox now keeps
such letters (src/cooper_rl/verify/sandbox.py, `Units`). A recorded verdict ([form, ref] of the CAS, ["rules",
completion, ref] of the rules) is asked again where its reference reads otherwise with and without the stripping:
nowhere else can the fix change it. A check that gives no verdict in time now leaves the recorded one. The record's
earlier lines stay (history); rebuilds from it stay deterministic.

    python experiments/verifyrm/reverify_units.py --append RECORD [--scan OTHER_RECORD ...]
"""

import argparse
import json
import signal
from pathlib import Path

from cooper_rl.io import append_jsonl, iter_jsonl
from cooper_rl.rm.latex_forms import TIMED_OUT, cas_says, rules_say
from cooper_rl.verify.sandbox import misread as sandbox_misread


def reads_otherwise(ref: str) -> bool:
    """Whether raw Math-Verify reads the reference otherwise than the fixed rule (the sandbox's `misread`); a parse
    that takes over 10 s counts as no."""

    def timeout(*_):
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(10)
    try:
        return sandbox_misread(ref)
    except TimeoutError:
        return False
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--append", required=True, help="the record (jsonl of key, verdict) to append changed verdicts to")
    ap.add_argument("--scan", nargs="*", default=[], help="records read before it (e.g. the round it builds on)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per check (run_v4.sh's CAS_TIMEOUT)")
    args = ap.parse_args()
    record = {}
    for path in [*args.scan, args.append]:
        record |= {r["key"]: r["verdict"] for _, r in iter_jsonl(Path(path))}
    refs = {k[-1] for k in map(json.loads, record) if len(k) in (2, 3) and k[0] != "parsed"}
    bad = {ref for ref in refs if reads_otherwise(ref)}
    changed, timed_out = [], []
    for key, old in record.items():
        k = json.loads(key)
        if k[-1] not in bad or k[0] == "parsed":
            continue
        fresh: dict = {}
        if len(k) == 2:  # [form, ref]: the CAS
            cas_says(k[0], k[1], args.timeout, fresh)
        else:  # ["rules", completion, ref]
            rules_say([k[1]], k[2], args.timeout, fresh)
        new = fresh.get(key, old)
        if new == TIMED_OUT and old != TIMED_OUT:  # no verdict in time now: the recorded one stays
            timed_out.append(key)
        elif new != old:
            changed.append({"key": key, "verdict": new})
    append_jsonl(args.append, changed)
    print(f"{len(refs)} references, {len(bad)} read otherwise without the stripping: {sorted(bad)}")
    print(f"{len(changed)} recorded verdicts changed -> appended to {args.append}; {len(timed_out)} gave no verdict")
    for c in changed:
        print("  ", c["key"][:150], "->", c["verdict"])


if __name__ == "__main__":
    main()
