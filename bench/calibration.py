"""Calibration of the verdict, fixed and sequential, by simulation with known truth
(skillbench.engine.simulate: the same truths for both designs, through the engine's own verdict
and stopping functions).

Printed per design and size: false PASS and false FAIL under A/A (true lift 0), power
(PASS rate) at net lifts 0.2, 0.4 and 0.6, sessions per verdict, the INCONCLUSIVE rate, and
the sequential design's ratios to the fixed one.

    .venv/bin/python bench/calibration.py [--sims N] [--k K] [--sizes 3 5 10 20 40]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Sequence

from skillbench.engine.simulate import LIFTS, Tally, fixed, sequential, truth


def calibrate(
    sizes: Sequence[int], k: int, sims: int, seed: int = 1, lifts: Sequence[float] = LIFTS
) -> dict[tuple[str, int, float], Tally]:
    out: dict[tuple[str, int, float], Tally] = {}
    for n in sizes:
        for lift in lifts:
            for design, run in (("fixed", fixed), ("sequential", sequential)):
                rng = random.Random(f"{seed}/{n}/{lift}")  # the same truths for both designs
                tally = out.setdefault((design, n, lift), Tally())
                for _ in range(sims):
                    tally.add(*run(rng, truth(rng, n, lift), k))
    return out


def table(results: dict[tuple[str, int, float], Tally], sizes: Sequence[int], sims: int) -> str:
    se = math.sqrt(0.05 * 0.95 / sims)
    lines = [
        f"{sims} simulated evals per cell; Monte-Carlo standard error at 0.05: {se:.4f}",
        f"{'design':<11}{'cases':>6}{'fPASS':>7}{'fFAIL':>7}{'pw0.2':>7}{'pw0.4':>7}"
        f"{'pw0.6':>7}{'incl':>6}{'sess@0':>8}{'sess@.4':>8}{'sess@.6':>8}",
    ]
    for design in ("fixed", "sequential"):
        for n in sizes:
            aa = results[(design, n, 0.0)]
            lines.append(
                f"{design:<11}{n:>6}{aa.rate('PASS'):>7.3f}{aa.rate('FAIL'):>7.3f}"
                + "".join(f"{results[(design, n, x)].rate('PASS'):>7.3f}" for x in (0.2, 0.4, 0.6))
                + f"{aa.rate('INCONCLUSIVE'):>6.2f}"
                + "".join(f"{results[(design, n, x)].mean_sessions:>8.1f}" for x in (0.0, 0.4, 0.6))
            )
    lines.append("sequential / fixed (sessions per verdict; power difference):")
    for n in sizes:
        parts = []
        for x in LIFTS:
            seq, fix = results[("sequential", n, x)], results[("fixed", n, x)]
            ratio = seq.mean_sessions / fix.mean_sessions
            parts.append(
                f"lift {x}: {ratio:.2f}x"
                + (f" (power {seq.rate('PASS') - fix.rate('PASS'):+.3f})" if x else "")
            )
        lines.append(f"  {n:>3} cases  " + " · ".join(parts))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 10, 20, 40])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results = calibrate(args.sizes, args.k, args.sims, args.seed)
    print(f"k = {args.k} repetitions per case")
    print(table(results, args.sizes, args.sims))


if __name__ == "__main__":
    main()
