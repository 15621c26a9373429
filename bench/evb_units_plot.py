#!/usr/bin/env python3
"""The event-builder units benchmark (daqx-bench-evb-units) run and drawn: the EvM's microseconds per batch and
the BU's nanoseconds per super-fragment against the number of RUs x BUs, as CSV (the program's) and a PNG plot,
with the machine's conditions. A benchmark, never a test.

    /usr/bin/python3 bench/evb_units_plot.py --build build/release --out build/bench/evb_units --repeat 3
"""

import argparse
import csv
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # importing the package would leave __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from daqx.bench import machine_conditions, pyplot  # noqa: E402  (the repository's package, found from this file)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build/release", help="build tree holding bench/daqx-bench-evb-units")
    parser.add_argument("--out", default="build/bench/evb_units", help="folder for the CSV and the plot")
    parser.add_argument("--repeat", type=int, default=3, help="runs per point; the median is reported (3)")
    parser.add_argument("--units", default="8,64,512", help="RUs = BUs per point (8,64,512)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "evb_units.csv")
    program = os.path.join(args.build, "bench", "daqx-bench-evb-units")
    print("machine:", ", ".join(f"{k} {v}" for k, v in machine_conditions().items()))
    subprocess.run([program, "--repeat", str(args.repeat), "--csv", csv_path, "--units", args.units], check=True)
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    plt, _ = pyplot("plot")
    if plt is None:
        return
    units = [int(r["units"]) for r in rows]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.plot(units, [float(r["evm_us_per_batch"]) for r in rows], marker="o")
    left.set(xscale="log", xlabel="RUs = BUs", ylabel="us per batch", title="EvM: assigning a batch")
    left.set_ylim(bottom=0)
    right.plot(units, [float(r["bu_ns_per_fragment"]) for r in rows], marker="o")
    right.set(xscale="log", xlabel="RUs = BUs", ylabel="ns per super-fragment", title="BU: assembling")
    right.set_ylim(bottom=0)
    for axes in (left, right):
        axes.set_xticks(units, [str(u) for u in units])
        axes.grid(alpha=0.3)
    figure.tight_layout()
    png = os.path.join(args.out, "evb_units.png")
    figure.savefig(png, dpi=110)
    print("plot:", png)


if __name__ == "__main__":
    main()
