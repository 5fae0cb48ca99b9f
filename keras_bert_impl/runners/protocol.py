"""The paper's fine-tuning protocol (Devlin et al. 2018, section 4.1 and appendix A.3): a learning-rate grid
times random restarts, each run a complete fine-tuning run, the best one on dev selected.

`--learning_rate_grid=5e-5,4e-5,3e-5,2e-5` trains one run per learning rate (it replaces
`--learning_rate`); `--num_restarts=N` trains N runs per learning rate, restart k with the seed
`--seed + 1000 * k` (restart 0 is `--seed` itself; a restart's seed sets its classifier initialization and
its data shuffling, epoch e shuffled with seed + e, so restarts of fewer than 1000 epochs share no shuffle).
Without either flag (no grid, one restart) `run_finetuning` trains the single run of today, with today's
files; this module is not used.

Every (learning rate, seed) run is `runners.finetuning.finetune` with its own output directory,
`output_dir/runs/lr=3e-05,seed=42/` (the learning rate's `repr`, its full precision: 1.0000001e-4 and
1.0000002e-4 are two runs), holding everything a single run writes (checkpoints, logs, best weights, model/,
eval_results.json, prediction files, run_settings.json). A run is complete once `finetune` has returned:
then `run_complete.json` (its settings and results) is written into its directory, last. The same command
started again skips every complete run and resumes an interrupted one from its checkpoints (`finetune`'s
resume). The protocol's settings (`utils.settings.run_settings`: the grid, the restarts and every setting
that shapes the trained weights) are recorded in `output_dir/run_settings.json`; once output_dir/runs/ holds
a run, a protocol with other values is refused in one line naming each (`training.run_directory`), before
any run is touched; `--overwrite_output_dir` starts it afresh.

Selection: the run with the highest dev value of the task's main metric (`task.main_metric`, the metric
that picks the best epoch: GLUE's `glue_data.GLUE_MAIN_METRIC`, NER and SQuAD F1, SWAG accuracy); ties go to
the earlier run (grid order, then restart order). When every run is complete, the top level of output_dir
gets, in this order:

    1. the selected run's files, copied from its directory (all but its checkpoints/, logs/ and
       run_complete.json): eval_results.json, model/, the prediction files, best.weights.h5,
       dev_metrics_per_epoch.json, train_log.jsonl, ..., where a single run puts them;
    2. protocol_results.md, a markdown table of every run and the mean / standard deviation per learning rate;
    3. protocol_results.json, last: every run (learning rate, seed, directory, dev metrics), the selected
       run, and per learning rate the mean and standard deviation (numpy's, ddof=0) of the main dev metric
       over its restarts (`selected_learning_rate`: those of the selected run's learning rate, the paper's
       "mean of 5 restarts" of Table 6).

protocol_results.json and protocol_results.md are removed when a protocol starts, so a top level without
protocol_results.json is not a finished protocol's (its copies may be another selection's or partial).
"""

import dataclasses
import json
import logging
import math
import numbers
import os
import shutil

import numpy as np

from keras_bert_impl.training import checkpoint_store, run_directory
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, atomic_path, write_json
from keras_bert_impl.utils.settings import run_settings

logger = logging.getLogger(__name__)

RUNS_DIR = "runs"
RUN_COMPLETE = "run_complete.json"
RESULTS_JSON = "protocol_results.json"
RESULTS_MD = "protocol_results.md"
SEED_STRIDE = 1000
# What stays in a run's directory: its training state, its TensorBoard events (`tensorboard --logdir
# output_dir/runs` shows every run), its completion record and settings (the top level has its own).
NOT_COPIED = (checkpoint_store.CHECKPOINT_SUBDIR, "logs", RUN_COMPLETE, run_directory.SETTINGS_FILE)


def protocol_settings(config):
    """(learning rates, seeds) of a `tasks.base.FinetuningConfig`, or None for a single run (no grid and one
    restart)."""
    if config.learning_rate_grid is None and config.num_restarts == 1:
        return None
    learning_rates = (tuple(float(rate) for rate in config.learning_rate_grid) if config.learning_rate_grid is not None
                      else (float(config.learning_rate),))
    seeds = tuple(int(config.seed) + SEED_STRIDE * k for k in range(config.num_restarts))
    return learning_rates, seeds


def run_name(learning_rate, seed):
    """The directory name of a run under output_dir/runs/, e.g. `lr=3e-05,seed=42`: the learning rate's
    `repr`, so that two learning rates are two directories however close they are.

    Examples:

    >>> run_name(3e-05, 42), run_name(1.0000001e-4, 1), run_name(1.0000002e-4, 1)
    ('lr=3e-05,seed=42', 'lr=0.00010000001,seed=1', 'lr=0.00010000002,seed=1')
    """
    return f"lr={float(learning_rate)!r},seed={seed}"


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _dev_metrics(results):
    """The numbers at the top level of a run's results (the dev metrics of its best epoch, and `epoch`)."""
    return {k: float(v) for k, v in sorted(results.items())
            if isinstance(v, numbers.Real) and not isinstance(v, bool)}


def summarize(runs, metric):
    """The selection and statistics of complete runs: (index of the selected run, per-learning-rate rows).

    Args:
        runs: [{"learning_rate", "seed", "dev": {metric: value, ...}}] in grid, then restart order.
        metric: the main dev metric, maximized.

    Returns:
        (selected index: the first run with the highest value; [{"learning_rate", "num_runs", "mean", "std",
        "max"}] per learning rate in grid order, std as numpy's default ddof=0).

    Examples:

    >>> runs = [{"learning_rate": 5e-5, "seed": 1, "dev": {"f1": 0.8}},
    ...         {"learning_rate": 5e-5, "seed": 2, "dev": {"f1": 0.6}},
    ...         {"learning_rate": 3e-5, "seed": 1, "dev": {"f1": 0.9}}]
    >>> selected, per_rate = summarize(runs, "f1")
    >>> selected, [(row["learning_rate"], round(row["mean"], 6), round(row["std"], 6)) for row in per_rate]
    (2, [(5e-05, 0.7, 0.1), (3e-05, 0.9, 0.0)])
    """
    values = [run["dev"][metric] for run in runs]
    selected = int(np.argmax(values))  # the first maximum
    per_rate = []
    for rate in dict.fromkeys(run["learning_rate"] for run in runs):
        rate_values = np.array([v for run, v in zip(runs, values) if run["learning_rate"] == rate], "float64")
        per_rate.append({"learning_rate": rate, "num_runs": int(len(rate_values)), "mean": float(rate_values.mean()),
                         "std": float(rate_values.std()), "max": float(rate_values.max())})
    return selected, per_rate


def markdown_table(report):
    """protocol_results.md: every run (the selected one marked) and mean ± std per learning rate."""
    metric = report["metric"]
    others = sorted({k for run in report["runs"] for k in run["dev"]} - {metric, "epoch"})
    lines = [f"# {report['task']}: learning rate x restarts, selected on dev {metric}", "",
             "| learning rate | seed | dev " + metric + " | " + " | ".join(f"dev {k}" for k in others)
             + (" | " if others else "") + "best epoch | selected |",
             "| --- | --- | --- | " + "--- | " * len(others) + "--- | --- |"]
    for i, run in enumerate(report["runs"]):
        cells = [repr(run["learning_rate"]), str(run["seed"]), f"{run['dev'][metric]:.4f}"]
        cells += [f"{run['dev'][k]:.4f}" if k in run["dev"] else "" for k in others]
        cells += [str(int(run["dev"]["epoch"])) if "epoch" in run["dev"] else "",
                  "**yes**" if i == report["selected"]["index"] else ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"| learning rate | runs | mean dev {metric} | std | max |", "| --- | --- | --- | --- | --- |"]
    for row in report["per_learning_rate"]:
        lines.append(f"| {row['learning_rate']!r} | {row['num_runs']} | {row['mean']:.4f} | {row['std']:.4f} | "
                     f"{row['max']:.4f} |")
    selected = report["selected"]
    lines += ["", f"Selected: {selected['output_dir']} (dev {metric} = {selected['dev'][metric]:.4f}); its files "
              "are copied to the top of the output directory."]
    return "\n".join(lines) + "\n"


def _copy_selected(run_dir, output_dir):
    """Copies the selected run's files (all but `NOT_COPIED`) to the top of output_dir, each atomically;
    returns their names."""
    copied = []
    for name in sorted(os.listdir(run_dir)):
        if name in NOT_COPIED or name.startswith("."):
            continue
        source, target = os.path.join(run_dir, name), os.path.join(output_dir, name)
        with atomic_path(target) as tmp:
            if os.path.isdir(source):
                shutil.copytree(source, tmp)
            else:
                shutil.copy2(source, tmp)
        copied.append(name)
    return copied


def run_protocol(task, distribution, finetune):
    """Trains every (learning rate, seed) run of the task's config (`protocol_settings`) with
    `finetune(run_task, distribution, select_on_dev=True)` in output_dir/runs/, skipping complete runs, then
    selects the best on dev and writes the top level of output_dir (see the module docstring). Returns the
    selected run's results (its eval_results.json).

    Args:
        task: a fresh `tasks.base.FinetuningTask`; every run gets a fresh task of its class on the run's
            config (`dataclasses.replace` of the task's: the run's learning rate, seed and output_dir).
        distribution: the `training.distribute.Distribution` the runs train under.
        finetune: `runners.finetuning.finetune` (passed in: this module is below it).
    """
    config = task.config
    learning_rates, seeds = protocol_settings(config)
    if not config.do_train:
        raise UserInputError("--learning_rate_grid / --num_restarts select among training runs: pass --do_train.")
    output_dir = config.output_dir
    run_directory.make_output_dir(output_dir)
    runs_dir = os.path.join(output_dir, RUNS_DIR)
    settings = run_settings(config)
    run_directory.bind_run_settings(output_dir, settings, bound=os.path.isdir(runs_dir) and bool(os.listdir(runs_dir)))
    run_directory.record_run_settings(output_dir, settings)
    for name in (RESULTS_JSON, RESULTS_MD):
        if os.path.isfile(os.path.join(output_dir, name)):
            os.remove(os.path.join(output_dir, name))
    metric = task.main_metric
    runs = []
    total = len(learning_rates) * len(seeds)
    for learning_rate in learning_rates:
        for seed in seeds:
            name = run_name(learning_rate, seed)
            run_config = dataclasses.replace(config, learning_rate=learning_rate, seed=seed,
                                             output_dir=os.path.join(runs_dir, name), learning_rate_grid=None,
                                             num_restarts=1, overwrite_output_dir=False)
            flags = run_settings(run_config)
            record_path = os.path.join(run_config.output_dir, RUN_COMPLETE)
            record = _read_json(record_path)
            logger.info(f"\n=== run {len(runs) + 1} of {total}: learning rate {learning_rate!r}, seed {seed} "
                        f"({run_config.output_dir})")
            if record is not None and record.get("flags") == flags:
                logger.info(f"complete ({record_path}): not trained again")
                results = record["results"]
            else:
                # select_on_dev: finetune refuses a run without dev metrics before training.
                results = finetune(task.with_config(run_config), distribution, select_on_dev=True)
                if metric not in results or not math.isfinite(float(results[metric])):
                    raise UserInputError(f"--learning_rate_grid / --num_restarts: the run in {run_config.output_dir} "
                                         f"has no dev {metric} to select on.")
                write_json(record_path, {"learning_rate": learning_rate, "seed": seed, "flags": flags,
                                         "results": results})
            runs.append({"learning_rate": learning_rate, "seed": seed,
                         "output_dir": os.path.join(RUNS_DIR, name), "dev": _dev_metrics(results),
                         "results": results})
    selected, per_rate = summarize(runs, metric)
    chosen = runs[selected]
    copied = _copy_selected(os.path.join(output_dir, chosen["output_dir"]), output_dir)
    selected_rate = next(row for row in per_rate if row["learning_rate"] == chosen["learning_rate"])
    report = {
        "task": task.name,
        "metric": metric,
        "learning_rates": list(learning_rates),
        "seeds": list(seeds),
        "runs": [{k: v for k, v in run.items() if k != "results"} for run in runs],
        "selected": {"index": selected, **{k: v for k, v in chosen.items() if k != "results"},
                     "copied_to_output_dir": copied},
        "per_learning_rate": per_rate,
        "selected_learning_rate": selected_rate,
    }
    with atomic_open(os.path.join(output_dir, RESULTS_MD)) as f:
        f.write(markdown_table(report))
    write_json(os.path.join(output_dir, RESULTS_JSON), report)
    logger.info(f"\nselected {chosen['output_dir']}: dev {metric} = {chosen['dev'][metric]:.4f}; at its learning rate "
                f"{chosen['learning_rate']!r}: mean {selected_rate['mean']:.4f}, std {selected_rate['std']:.4f} over "
                f"{selected_rate['num_runs']} run(s). Wrote {os.path.join(output_dir, RESULTS_JSON)} and "
                f"{RESULTS_MD}; copied {', '.join(copied)} from {chosen['output_dir']}.")
    return chosen["results"]
