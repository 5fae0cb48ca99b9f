"""The plan of the paper's ablation tables at a size a CPU runs: the sizes shared by every row of a table
(`Sizes`: `FULL`, `SMOKE`, `--config`, `--sizes`) and the steps that make each cell (`Plan`): the corpus,
the vocabulary, the pretraining data per MASK/SAME/RND split, the pretraining per objective, and the
fine-tunings of each model on the shipped sets. `experiments/ablations.py` arranges them into Tables 5, 7 and 8.
"""

import dataclasses
import os

from keras_bert_impl.experiments.experiment_steps import Step, read_json
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_open, write_json

# The paper's Table 8 rows: (MASK, SAME, RND) shares of the tokens chosen for prediction.
MASKING_SPLITS = ((0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.8, 0.0, 0.2), (0.8, 0.2, 0.0), (0.0, 0.2, 0.8),
                  (0.0, 0.0, 1.0))
ORIGINAL_SPLIT = MASKING_SPLITS[0]


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


class Plan:
    """The steps of the tables in `work_dir` for the parsed flags `args` (`build_parser`); `repo`: the
    repository root, where the steps' scripts are.

    Examples:

    >>> from keras_bert_impl.experiments.ablations import build_parser
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
        squad = read_json(os.path.join(data_dir, "qa", name))
        squad["data"] = [dict(squad["data"][0], paragraphs=squad["data"][0]["paragraphs"][: max(1, n // 4)])]
        write_json(os.path.join(qa, name), squad)
    return sentiment, ner, os.path.join(qa, "train.json"), os.path.join(qa, "dev.json")
