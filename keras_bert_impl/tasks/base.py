"""The fine-tuning task interface, loading a checkpoint and its tokenizer from the flags, and saving a
complete model directory.

A `FinetuningTask` holds everything one family of fine-tuning runs does differently (GLUE, NER, SQuAD,
SWAG): its files, features, model, loss, dev metric and prediction files. The training loop that every
task shares (seed, optimizer, `fit` with the best dev checkpoint, eval_results.json) is
`keras_bert_impl.runners.finetuning.run_finetuning`.
"""

import dataclasses
import json
import os

from keras_bert_impl.config import BertConfig, find_config_file
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.vocabulary import check_vocab_size
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import atomic_path, write_json

CONFIG_FILE_NAMES = ("config.json", "bert_config.json")
WEIGHT_FILE_NAMES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def _checkpoint_directory(path):
    """The directory of `--init_checkpoint`: the path itself, or the directory of a Google checkpoint prefix."""
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def check_model_flags(args):
    """Checks the flags naming the model's files before anything is read; raises `UserInputError` naming
    the flag and the path: `--init_checkpoint` (a directory with config.json or bert_config.json and
    weights, or a Google checkpoint prefix), `--vocab_file`, `--bert_config_file`, one of
    `--init_checkpoint`/`--bert_config_file`, a vocabulary (`--vocab_file` or the checkpoint's vocab.txt),
    and `--output_dir` (not a file).

    Examples:

    >>> import argparse
    >>> flags = argparse.Namespace(init_checkpoint="/tmp/nope", vocab_file=None, bert_config_file=None,
    ...                            output_dir="/tmp/out")
    >>> check_model_flags(flags)
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --init_checkpoint: no checkpoint at /tmp/nope (expected a directory with config.json or bert_config.json, or a Google checkpoint prefix such as .../bert_model.ckpt)
    """
    for flag in ("vocab_file", "bert_config_file"):
        path = getattr(args, flag, None)
        if path and not os.path.isfile(path):
            raise UserInputError(f"--{flag}: no file at {path}")
    output_dir = getattr(args, "output_dir", None)
    if output_dir and os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UserInputError(f"--output_dir: {output_dir} is a file, not a directory")
    path = args.init_checkpoint
    if not path:
        if not args.bert_config_file:
            raise UserInputError("Either --init_checkpoint or --bert_config_file is required (--bert_config_file "
                                 "alone starts from random weights).")
        if not args.vocab_file:
            raise UserInputError("--vocab_file is required without --init_checkpoint.")
        return
    if os.path.isfile(path) and path.endswith(".json"):
        return  # a config file next to the weights, as `BertBackbone.from_pretrained` reads it
    if not os.path.isdir(path) and not os.path.isfile(path + ".index"):
        raise UserInputError(f"--init_checkpoint: no checkpoint at {path} (expected a directory with "
                             f"{' or '.join(CONFIG_FILE_NAMES)}, or a Google checkpoint prefix such as "
                             ".../bert_model.ckpt)")
    directory = _checkpoint_directory(path)
    if not any(os.path.isfile(os.path.join(directory, name)) for name in CONFIG_FILE_NAMES):
        raise UserInputError(f"--init_checkpoint: {directory} has no {' or '.join(CONFIG_FILE_NAMES)}")
    if os.path.isdir(path) and not (
        any(os.path.isfile(os.path.join(path, name)) for name in WEIGHT_FILE_NAMES)
        or any(name.endswith(".index") for name in os.listdir(path))
    ):
        raise UserInputError(f"--init_checkpoint: {path} has no weights (expected {', '.join(WEIGHT_FILE_NAMES)} "
                             "or a Google bert_model.ckpt.index)")
    if not args.vocab_file and not os.path.isfile(os.path.join(directory, "vocab.txt")):
        raise UserInputError(f"--vocab_file is required: the --init_checkpoint directory {directory} holds no "
                             "vocab.txt.")


def load_tokenizer(args):
    """The tokenizer of `--vocab_file`, else of the `--init_checkpoint` directory."""
    kwargs = {} if args.do_lower_case is None else {"do_lower_case": args.do_lower_case}
    if args.vocab_file:
        if not os.path.isfile(args.vocab_file):
            raise UserInputError(f"--vocab_file: no file at {args.vocab_file}")
        return BertTokenizer(args.vocab_file, **kwargs)
    directory = _checkpoint_directory(args.init_checkpoint) if args.init_checkpoint else None
    if not directory or not os.path.isfile(os.path.join(directory, "vocab.txt")):
        raise UserInputError("--vocab_file is required when --init_checkpoint is not a directory holding vocab.txt.")
    return BertTokenizer.from_pretrained(directory, **kwargs)


def model_config_file(args):
    """The config file whose `vocab_size` the model of the flags gets: `--bert_config_file` (it replaces the
    checkpoint's fields), else the `--init_checkpoint`'s config.json / bert_config.json; None without either."""
    if getattr(args, "bert_config_file", None):
        return args.bert_config_file
    path = getattr(args, "init_checkpoint", None)
    if not path:
        return None
    return find_config_file(path if os.path.isfile(path) else _checkpoint_directory(path))


def check_tokenizer_fits_model(tokenizer, args):
    """Refuses (`UserInputError`) a tokenizer with more ids than the `vocab_size` of the model the flags
    load (`model_config_file`), before the model is built: out-of-table ids fail on TensorFlow and give
    NaN losses on JAX."""
    path = model_config_file(args)
    if path is not None:
        check_vocab_size(tokenizer, BertConfig.from_json_file(path).vocab_size, path)


def config_overrides(args, **overrides):
    """Backbone config fields replacing the checkpoint's: `--bert_config_file`'s (when given), then `overrides`.

    The attention direction is replaced only when the file states it (`attention_direction` or
    `is_decoder`): a Google-style bert_config.json, which has neither, keeps a causal checkpoint causal."""
    stored = {}
    if args.bert_config_file:
        stored = BertConfig.from_json_file(args.bert_config_file).to_dict()
        with open(args.bert_config_file, encoding="utf-8") as f:
            if not {"attention_direction", "is_decoder"} & set(json.load(f)):
                del stored["attention_direction"]
    return {**stored, **overrides}


def load_backbone(args, output_hidden_states=False, **overrides):
    """The backbone of `--init_checkpoint` (with `--bert_config_file` when given), else a random one of
    `--bert_config_file`; `output_hidden_states` as in `BertBackbone`, `overrides`: config fields."""
    if args.init_checkpoint:
        return BertBackbone.from_pretrained(args.init_checkpoint, output_hidden_states=output_hidden_states,
                                            **config_overrides(args, **overrides))
    if not args.bert_config_file:
        raise UserInputError("Either --init_checkpoint or --bert_config_file is required.")
    config = BertConfig.from_json_file(args.bert_config_file)
    if overrides:
        config = BertConfig.from_dict({**config.to_dict(), **overrides})
    return BertBackbone(config, output_hidden_states=output_hidden_states)


def save_model_directory(model, tokenizer, directory, max_seq_length, extra_config=None, **save_kwargs):
    """Writes a complete model directory: the model's `save_pretrained` (config.json, model.safetensors),
    the tokenizer's vocab.txt and tokenizer_config.json (with its do_lower_case), and `max_seq_length`
    plus the `extra_config` entries (e.g. SQuAD's decoding settings) in config.json. `save_kwargs` go to
    the model's `save_pretrained` (e.g. `label_names`). The directory appears complete or not at all
    (`file_io.atomic_path`), so a run killed while saving never leaves a model directory that looks whole."""
    with atomic_path(directory) as tmp:
        model.save_pretrained(tmp, **save_kwargs)
        tokenizer.save_pretrained(tmp)
        config_path = os.path.join(tmp, "config.json")
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
        config.update(extra_config or {}, max_seq_length=int(max_seq_length))
        write_json(config_path, config)


def batching_options(args):
    """The padding options of prediction batches (`batching.predict_bucketed`) from the flags."""
    return {"dynamic_padding": args.dynamic_padding, "max_length": args.max_seq_length,
            "pad_to_multiple_of": args.pad_to_multiple_of}


@dataclasses.dataclass
class TrainingSet:
    """The training data of a task, as `run_finetuning` feeds it to `model.fit`.

    Attributes:
        features: dict name -> per-example sequences (`bucketed`), or dict name -> arrays [N, T].
        labels: the labels (per example, or per token), or the label arrays when not `bucketed`.
        num_examples: the units counted by the step schedule (examples, windows or features).
        description: what the run trains on, for the log line.
        bucketed: whether `features` go through the length-bucketed batches (`training_batches`).
        batching_options: more `training_batches` arguments (e.g. label_padding_value).
        fit_kwargs: more `model.fit` arguments (e.g. shuffle=True, which reorders the bucketed batches).
    """

    features: dict
    labels: object
    num_examples: int
    description: str
    bucketed: bool = True
    batching_options: dict = dataclasses.field(default_factory=dict)
    fit_kwargs: dict = dataclasses.field(default_factory=dict)


class FinetuningTask:
    """One family of fine-tuning runs, driven by `run_finetuning(task, args)` in this order:

    `check_flags()` (and the driver's `check_model_flags`); `setup(tokenizer)` (reads and checks every
    file the flags name, raising `UserInputError`); with --do_train `training_set()`; `build_model()`
    (loads the checkpoint); with --do_train: `model.compile` with BERT's optimizer and the model's loss,
    `fit` (with `evaluate` after every epoch and the best weights kept when `can_evaluate`; resumed from
    output_dir/checkpoints after a crash), `best_results(metrics)`, `save_model(...)`; `evaluate(model)`
    when `can_evaluate` and there are no results yet; with --do_predict `predict(model, results)`; finally
    `write_results(results)`.

    Attributes:
        name: the task's name in log lines.
        main_metric: the key of `evaluate`'s dict that picks the best epoch.
        args: the recipe's flags.
    """

    name = "task"
    main_metric = "accuracy"

    def __init__(self, args):
        self.args = args
        self.tokenizer = None

    def check_flags(self):
        """Raises `UserInputError` for flag combinations the task cannot run."""
        if not (self.args.do_train or self.args.do_eval or self.args.do_predict):
            raise UserInputError("At least one of --do_train, --do_eval or --do_predict must be set.")

    def setup(self, tokenizer):
        """Reads what the model and the evaluation need before training (labels, dev sets); checks that the
        tokenizer's ids fit the model's vocab_size (`check_tokenizer_fits_model`)."""
        check_tokenizer_fits_model(tokenizer, self.args)
        self.tokenizer = tokenizer

    @property
    def can_evaluate(self):
        """Whether there is a labelled dev set: then every epoch is evaluated and the best one kept."""
        return bool(self.args.do_eval)

    def build_model(self):
        raise NotImplementedError

    def training_set(self):
        """The `TrainingSet` of --do_train."""
        raise NotImplementedError

    def evaluate(self, model):
        """The dev metrics (the paper's metric first among them), a dict."""
        raise NotImplementedError

    def best_results(self, best_metrics):
        """The results after training, from the best epoch's dev metrics (the model holds its weights)."""
        return dict(best_metrics)

    def save_model(self, model, directory):
        """Writes the fine-tuned model directory (`save_model_directory`)."""
        save_model_directory(model, self.tokenizer, directory, self.args.max_seq_length)

    def predict(self, model, results):
        """Writes the prediction files of --do_predict; returns the results, with any test metrics added."""
        return results

    def write_results(self, results):
        """Writes eval_results.json (when the task has results to write)."""
        if self.args.do_eval:
            write_json(os.path.join(self.args.output_dir, "eval_results.json"), results)
