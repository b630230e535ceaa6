"""The numbers behind the figures: evaluation rows, curves on a common grid, final scores, seed
pairs and the one interval every band and bar shows (the Student t-interval of
:func:`benchmarks.intervals.mean_interval`, never seaborn's percentile bootstrap, which covers far
less than 95% at 3-10 seeds). No drawing here."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from benchmarks import intervals

EVAL_PHASES = ("pretrain", "online")
FEW_EVALS = 3  # a curve with a run of at most this many evaluations shows where it starts and ends, no line
ENDS = ("start mean", "final mean")


def _y(df: pd.DataFrame) -> str:
    """The score column a figure reads: D4RL's normalized score where the runs have one, else the return."""
    return "score_mean" if "score_mean" in df and df["score_mean"].notna().any() else "return_mean"


def evals(df: pd.DataFrame) -> pd.DataFrame:
    """The evaluation rows (pretraining and online), without sweeps or bookkeeping rows."""
    return df[df["phase"].isin(EVAL_PHASES)] if "phase" in df else df.iloc[0:0]


def common_end(df: pd.DataFrame, x: str) -> float:
    """The largest x every complete run reaches (runs stop at the first round past the budget,
    each at its own count; averaging beyond the first to stop makes the mean jump)."""
    done = df[df["status"] == "complete"] if "status" in df and (df["status"] == "complete").any() else df
    return float(done.groupby("run_id")[x].max().min())


def on_grid(df: pd.DataFrame, x: str, y: str, by: list[str], points: int = 40,
            common: bool = False, common_start: bool = False) -> pd.DataFrame:
    """Each run's (x, y) curve interpolated onto one grid of x, so runs can be averaged;
    ``common``: the grid ends where the first complete run ends, so every point averages every run;
    ``common_start``: it starts where the last run starts (runs whose first row comes at
    different x, as the exploration RTG does online, would make the mean jump as each enters)."""
    df = df.dropna(subset=[x, y])
    if df.empty:
        return pd.DataFrame(columns=[*by, "run_id", x, y])
    # each run is drawn from its own first evaluation (no flat extrapolation before it) to its last
    start = float(df.groupby("run_id")[x].min().max()) if common_start else float(df[x].min())
    grid = np.linspace(start, common_end(df, x) if common else float(df[x].max()), points)
    out = []
    for keys, g in df.groupby([*by, "run_id"], sort=True):
        # one value per x: the latest evaluation there (pretraining's rows all sit at 0 online samples,
        # and the curve starts where pretraining ended)
        g = g.sort_values([x, "step"] if "step" in g else [x], kind="stable").drop_duplicates(x, keep="last")
        xs, ys = g[x].to_numpy(float), g[y].to_numpy(float)
        inside = grid[(grid >= xs.min()) & (grid <= xs.max())]
        vals = np.interp(inside, xs, ys)
        keys = keys if isinstance(keys, tuple) else (keys,)
        out.append(pd.DataFrame({**dict(zip([*by, "run_id"], keys)), x: inside, y: vals}))
    return pd.concat(out, ignore_index=True)


def _natural(text) -> tuple:
    """Sort key that orders 'g_online=2x' before 'g_online=10x'."""
    return tuple((0, float(t), "") if t.replace(".", "", 1).isdigit() else (1, 0.0, t)
                 for t in re.split(r"(\d+(?:\.\d+)?)", str(text)) if t)


def _order(values) -> list:
    return sorted(pd.unique(pd.Series(values)), key=_natural)


def _split_variant(df: pd.DataFrame) -> pd.DataFrame:
    """Variant 'a,b,c' -> factor 'a' (what the figure compares) and setting 'b,c' (the rest)."""
    df = df.copy()
    parts = df["variant"].astype(str).str.split(",", n=1)
    df["factor"] = parts.str[0]
    df["setting"] = parts.str[1].fillna("")
    return df


def latest_per_x(e: pd.DataFrame, x: str) -> pd.DataFrame:
    """Each run's evaluations, one per x (the latest there: pretraining's all sit at 0 online
    samples, and a run's online course starts where its pretraining ended), sorted by x."""
    keys = ["run_id", x, "step"] if "step" in e else ["run_id", x]
    return e.sort_values(keys, kind="stable").drop_duplicates(["run_id", x], keep="last")


def t_interval(values) -> tuple[float, float, float]:
    """Mean and 95% t-interval (:func:`benchmarks.intervals.mean_interval`); one value: no interval."""
    values = np.asarray(values, float)
    if len(values) < 2:
        return float(values.mean()) if len(values) else np.nan, np.nan, np.nan
    i = intervals.mean_interval(values)
    return i.estimate, i.low, i.high


def t_band(values) -> tuple[float, float]:
    """(low, high) of the 95% t-interval of the mean of ``values`` over seeds: every band and bar of
    the figures (seaborn's ``errorbar``, which leaves a single value without one); NaN for one value."""
    _, low, high = t_interval(values)
    return low, high


BAND = t_band  # seaborn's default errorbar and ("ci", 95) are percentile bootstraps: never used here


def start_and_final(g: pd.DataFrame, x: str, y: str, by: list[str]) -> pd.DataFrame:
    """A curve's runs' first and last evaluations: each end's mean x, mean ``y`` and its 95%
    t-interval over the ``n`` runs (NaN, no bar, for one run)."""
    runs = latest_per_x(g.dropna(subset=[x, y]), x).groupby("run_id")
    rows = []
    for drawn, ends in zip(ENDS, (runs.head(1), runs.tail(1))):
        low, high = t_band(ends[y])
        rows.append({**ends[by].iloc[0].to_dict(), "drawn": drawn, x: ends[x].mean(), y: ends[y].mean(),
                     "n": len(ends), "low": low, "high": high})
    return pd.DataFrame(rows)


def last_evaluations(df: pd.DataFrame) -> pd.DataFrame:
    """Each run's last evaluation: the final score the protocols read."""
    return evals(df).sort_values("step").groupby("run_id").tail(1)


def paired_differences(df: pd.DataFrame, a: str, b: str, y: str) -> pd.DataFrame:
    """Per seed that ran both variants, the final ``y`` of variant ``a``, of ``b``, and a − b."""
    wide = last_evaluations(df).pivot_table(index="seed", columns="variant", values=y)
    if a not in wide or b not in wide:
        return pd.DataFrame(columns=["seed", "a", "b", "difference"])
    wide = wide[[a, b]].dropna().reset_index().set_axis(["seed", "a", "b"], axis=1)
    return wide.assign(difference=wide["a"] - wide["b"])


def pretraining_end(e: pd.DataFrame) -> float:
    """The updates of the last pretraining evaluation (NaN when there is none)."""
    return e.loc[e["phase"] == "pretrain", "updates"].max() if {"phase", "updates"} <= set(e) else np.nan
