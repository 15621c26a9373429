#!/usr/bin/env python3
"""Plots a soak run's samples (soak.csv, written by daqx_soak_run) as soak.png beside it: RSS, descriptors,
threads, pool blocks in use and event rates of every unit over time, the warm-up shaded. Run with Debian's
/usr/bin/python3 (python3-matplotlib)."""
import argparse
import csv
import os
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", help="the soak run's folder (with soak.csv); soak.png is written there")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is missing (Debian: python3-matplotlib, run with /usr/bin/python3): no plot")
        return 0
    units, warm_up = {}, None
    with open(os.path.join(args.directory, "soak.csv")) as f:
        for row in csv.DictReader(f):
            units.setdefault(row["unit"], []).append(row)
            if row["phase"] == "run":  # the warm-up ends where the first sample judged is
                warm_up = min(warm_up or float(row["t_s"]), float(row["t_s"]))
    if not units:
        print("soak.csv has no samples: no plot")
        return 1
    panels = [("rss_bytes", "RSS [MiB]", 1 / 1048576), ("fds", "file descriptors", 1), ("threads", "threads", 1),
              ("pool_blocks_used", "pool blocks in use", 1), ("events_per_s", "events/s (EvM: assigned)", 1),
              ("bytes_per_s", "MB/s", 1e-6)]
    figure, axes = plt.subplots(len(panels), 1, figsize=(10, 3 * len(panels)), sharex=True)
    for axis, (column, label, scale) in zip(axes, panels):
        for unit, rows in units.items():
            axis.plot([float(r["t_s"]) / 60 for r in rows], [float(r[column]) * scale for r in rows], label=unit)
        if warm_up:
            axis.axvspan(0, warm_up / 60, color="grey", alpha=0.15)
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
    axes[0].legend(ncol=5, fontsize="small")
    axes[0].set_title("soak: 4x4 event builder, every event checked (warm-up shaded)")
    axes[-1].set_xlabel("minutes since the enable")
    figure.tight_layout()
    out = os.path.join(args.directory, "soak.png")
    figure.savefig(out, dpi=100)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
