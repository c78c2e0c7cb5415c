"""Plots of the benchmark records, for the README.

    python -m benchmarks.plots [--results benchmarks/results] [--out docs/plots]

Reads every JSON record in RESULTS (as `python -m benchmarks` writes them) and draws:
- bfs-gteps.png: BFS GTEPS per Kronecker scale, ours against each baseline measured in the
  same process on the same CSR (baseline GTEPS = ours / speedup), one line per backend;
- bfs-level-time.png: microseconds per BFS level on every graph measured, from low-diameter
  Kronecker graphs (a few levels of millions of vertices) to road networks and grids
  (thousands of small levels, where per-level latency is all that counts);
- mst-edges-per-second.png: Boruvka forest, input edges per second per scale, against scipy.
When a case was measured more than once, the latest record counts. Needs matplotlib
(`pip install -e '.[plots]'`).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BASELINE_NAMES = {"spmv": "SpMV BFS (cupyx)", "seed": "seed kernel", "scipy": "scipy"}


def load_records(results: Path) -> list[dict]:
    records = []
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        for record in data if isinstance(data, list) else [data]:
            # a record with a "variant" measured an experiment's alternative, not the software
            if record.get("algo") in ("bfs", "mst", "csr") and record.get("validated", True) \
                    and "variant" not in record:
                records.append({**record, "file": path.name})
    return records


def latest(records: list[dict], key) -> dict:
    """One record per key, the latest (by date, then file order)."""
    chosen = {}
    for r in sorted(records, key=lambda r: (r.get("date", ""), r["file"])):
        chosen[key(r)] = r
    return chosen


def _scale(graph: str) -> int | None:
    kind, _, arg = graph.partition(":")
    return int(arg) if kind == "kron" else None


def _label(backend: str, machine: str) -> str:
    return f"ours, {'CuPy' if backend == 'cupy' else 'NumPy'} ({machine.split(' / ')[0]})"


def _baseline_label(name: str, machine: str) -> str:
    where = machine.split(" / ")[0]
    if name == "scipy" and not where.startswith("CPU"):
        where = f"CPU of the {where} host"  # scipy runs on the host beside the GPU
    return f"{BASELINE_NAMES.get(name, name)} ({where})"


def _dated(ax, records: list[dict]) -> None:
    dates = sorted({r.get("date", "?") for r in records})
    ax.annotate(f"records of {', '.join(dates)} in benchmarks/results/", xy=(1, 0), xycoords="figure fraction",
                xytext=(-6, 4), textcoords="offset points", ha="right", va="bottom", fontsize=7, color="gray")


def plot_bfs_gteps(records: list[dict], plt, out: Path) -> Path:
    bfs = [r for r in records if r["algo"] == "bfs" and _scale(r["graph"]) is not None]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ours = latest(bfs, lambda r: (r["backend"], r["machine"], r["graph"]))
    for (backend, machine) in sorted({(b, m) for b, m, _ in ours}):
        points = sorted((_scale(g), r["gteps"]) for (b, m, g), r in ours.items() if (b, m) == (backend, machine))
        ax.plot(*zip(*points), marker="o", linewidth=2, label=_label(backend, machine))
    baselines = latest([r for r in bfs if r.get("baseline")], lambda r: (r["baseline"], r["machine"], r["graph"]))
    for (name, machine) in sorted({(b, m) for b, m, _ in baselines}):
        points = sorted((_scale(g), r["gteps"] / r["speedup"]) for (b, m, g), r in baselines.items()
                        if (b, m) == (name, machine) and r.get("speedup"))
        ax.plot(*zip(*points), marker="s", linestyle="--", label=_baseline_label(name, machine))
    ax.set_yscale("log")
    ax.set_xlabel("Kronecker scale (2^scale vertices, edge factor 16)")
    ax.set_ylabel("GTEPS (Graph500, harmonic mean of 16 roots)")
    ax.set_title("BFS throughput")
    ax.set_xticks(sorted({_scale(r["graph"]) for r in bfs}))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _dated(ax, bfs)
    return _save(fig, out / "bfs-gteps.png")


def plot_bfs_level_time(records: list[dict], plt, out: Path) -> Path:
    bfs = latest([r for r in records if r["algo"] == "bfs" and r.get("us_per_level")],
                 lambda r: (r["backend"], r["machine"], r["graph"]))
    rows = sorted(bfs.items(), key=lambda item: (item[0][0], item[1]["levels_mean"]))
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(rows) + 1.2))
    labels = [f"{Path(g.split(':', 1)[1]).stem if g.startswith('parquet:') else g}, {b} "
              f"({r['levels_mean']:,.0f} levels)" for (b, _, g), r in rows]
    ax.barh(labels, [r["us_per_level"] for _, r in rows], color=["tab:green" if b == "cupy" else "tab:blue"
                                                                for (b, _, _), _ in rows])
    ax.set_xscale("log")
    ax.set_xlabel("microseconds per BFS level (search time / levels)")
    ax.set_title("BFS time per level")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.invert_yaxis()
    _dated(ax, [r for _, r in rows])
    return _save(fig, out / "bfs-level-time.png")


def plot_mst(records: list[dict], plt, out: Path) -> Path:
    mst = [r for r in records if r["algo"] == "mst" and _scale(r["graph"]) is not None]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ours = latest(mst, lambda r: (r["backend"], r["machine"], r["graph"]))
    for (backend, machine) in sorted({(b, m) for b, m, _ in ours}):
        points = sorted((_scale(g), r["edges_per_second"]) for (b, m, g), r in ours.items() if (b, m) == (backend, machine))
        ax.plot(*zip(*points), marker="o", linewidth=2, label=_label(backend, machine))
    base = latest([r for r in mst if r.get("baseline") and r.get("baseline_seconds")],
                  lambda r: (r["baseline"], r["machine"], r["graph"]))
    for (name, machine) in sorted({(b, m) for b, m, _ in base}):
        points = sorted((_scale(g), r["edges"] / r["baseline_seconds"]) for (b, m, g), r in base.items()
                        if (b, m) == (name, machine))
        ax.plot(*zip(*points), marker="s", linestyle="--", label=_baseline_label(name, machine))
    ax.set_yscale("log")
    ax.set_xlabel("Kronecker scale")
    ax.set_ylabel("input edges per second")
    ax.set_title("Minimum spanning forest throughput")
    ax.set_xticks(sorted({_scale(r["graph"]) for r in mst}))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _dated(ax, mst)
    return _save(fig, out / "mst-edges-per-second.png")


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})  # no version stamp: reruns give equal files
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.plots", description=__doc__.split("\n")[1])
    p.add_argument("--results", type=Path, default=Path("benchmarks/results"))
    p.add_argument("--out", type=Path, default=Path("docs/plots"))
    args = p.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = load_records(args.results)
    if not records:
        print(f"error: no benchmark records in {args.results}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for plot in (plot_bfs_gteps, plot_bfs_level_time, plot_mst):
        print(f"wrote {plot(records, plt, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
