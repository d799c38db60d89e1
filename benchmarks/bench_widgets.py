"""Benchmark (not a test): time from a control change to the redrawn explorer view.

Setting a control's ``value`` in the kernel runs the explorer's observer
synchronously: the pure model is recomputed, the figure's artists are updated
and rendered to PNG, and the labels' HTML is replaced. That is the latency this
script measures, per explorer and control, as the median over repeated changes.
The browser's own work afterwards (decoding one PNG, patching a few labels) is
not included.

As a baseline measured in the same run, each explorer's figures are also rendered
again without any change; the ratio latency / baseline shows what a change costs
relative to drawing every picture (below 1 when the view skips a picture whose
inputs did not change, above 1 for model and label work on top). The aim is a
median latency under 50 ms.

Run: ``.venv/bin/python benchmarks/bench_widgets.py [--repeats 40] [--json]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time

from course.widgets import chain_rule_explorer, kl_explorer, truncation_explorer

AIM_MS = 50.0

CASES = [
    # (name, builder, control, values cycled through)
    ("truncation/nucleus", lambda: truncation_explorer(preset="nucleus"), "top_p",
     [0.80, 0.81, 0.5, 0.95]),
    ("truncation/default", lambda: truncation_explorer(), "temperature", [0.7, 1.0, 1.5, 2.5]),
    ("truncation/default", lambda: truncation_explorer(), "positions", [2, 4, 8, 16]),
    ("kl/k_estimators", lambda: kl_explorer(preset="k_estimators"), "samples",
     [500, 1000, 2000, 5000]),
    ("kl/k_estimators", lambda: kl_explorer(preset="k_estimators"), "seed", [1, 2, 3, 4]),
    ("kl/support", lambda: kl_explorer(preset="support"), "preset",
     ["support_infinite_log", "support_missing_mass"]),
    ("chain_rule", chain_rule_explorer, "p0", [0.3, 0.6, 0.9, 0.1]),
    ("chain_rule", chain_rule_explorer, "q_given_1", [0.2, 0.5, 0.8]),
]


def median_ms(samples: list[float]) -> float:
    return 1000.0 * statistics.median(samples)


def time_control(explorer, control: str, values: list, repeats: int) -> list[float]:
    widget = explorer.controls[control]
    cycle = itertools.cycle(values)
    # Skip a value equal to the current one: traitlets would not fire an update.
    times = []
    while len(times) < repeats:
        value = next(cycle)
        if value == widget.value:
            continue
        start = time.perf_counter()
        widget.value = value
        times.append(time.perf_counter() - start)
        assert explorer.error is None, explorer.error
    return times


def time_render(explorer, repeats: int) -> list[float]:
    """Drawing every figure of the explorer once, unchanged (``render()`` without a key)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for plot in explorer.plots():
            plot.render()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40, help="control changes per case")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    rows = []
    for name, build, control, values in CASES:
        explorer = build()
        time_control(explorer, control, values, 3)  # warm caches (fonts, glyphs)
        latency = median_ms(time_control(explorer, control, values, args.repeats))
        baseline = median_ms(time_render(explorer, args.repeats))
        rows.append({"explorer": name, "control": control, "median_ms": round(latency, 2),
                     "render_only_ms": round(baseline, 2),
                     "ratio_to_render": round(latency / baseline, 2),
                     "within_aim": latency < AIM_MS})
    overall = statistics.median(row["median_ms"] for row in rows)
    if args.json:
        print(json.dumps({"aim_ms": AIM_MS, "median_of_medians_ms": overall, "cases": rows},
                         indent=2))
        return
    print(f"{'explorer':<20} {'control':<10} {'median ms':>10} {'render ms':>10} {'ratio':>6}  aim")
    for row in rows:
        print(f"{row['explorer']:<20} {row['control']:<10} {row['median_ms']:>10.2f} "
              f"{row['render_only_ms']:>10.2f} {row['ratio_to_render']:>6.2f}  "
              f"{'ok' if row['within_aim'] else 'OVER ' + str(AIM_MS)}")
    print(f"median of the medians: {overall:.2f} ms (aim < {AIM_MS:.0f} ms)")


if __name__ == "__main__":
    main()
