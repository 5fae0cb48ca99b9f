"""The fine-tuning task interface, loading a checkpoint and its tokenizer from a task's settings, and saving a
complete model directory.

A `FinetuningTask` is built on its config (`tasks.configs.FinetuningConfig` or the subclass of its family,
`GlueConfig`, ...: the settings, one field per flag of the recipes) and holds everything one family of
fine-tuning runs does differently (GLUE, NER, SQuAD, SWAG): its files, features, model, loss, dev metric and
prediction files. The training loop that every task shares (seed, optimizer, `fit` with the best dev
checkpoint, eval_results.json) is `keras_bert_impl.runners.finetuning.run_finetuning(task)`; the recipes build
the config from their flags (`runners.flags.config_from_flags`).
"""

import dataclasses
import os
import warnings

from keras_bert_impl.checkpoints.model_directory import MAX_SEQ_LENGTH_KEY, ModelDirectory
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tasks.configs import FinetuningConfig
from keras_bert_impl.tokenizers import packing
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.vocabulary import check_vocab_size
from keras_bert_impl.utils import model_files
from keras_bert_impl.utils.errors import CheckpointNotFoundError, UserInputError
from keras_bert_impl.utils.file_io import atomic_path, write_json


def _init_checkpoint(config):
    """The `ModelDirectory` of `--init_checkpoint` (a path or a model name), or a `UserInputError` naming the flag."""
    try:
        return ModelDirectory(config.init_checkpoint)
    except CheckpointNotFoundError as error:
        if str(error) == f"No checkpoint at {config.init_checkpoint}":
            raise UserInputError(
                f"--init_checkpoint: no checkpoint at {config.init_checkpoint} (expected a directory with "
                f"{' or '.join(model_files.CONFIG_FILES)}, a Google checkpoint prefix such as .../bert_model.ckpt, "
                "or a Hugging Face model name)") from None
        raise UserInputError(f"--init_checkpoint: {error}") from None


def check_model_flags(config):
    """Checks the settings (a `FinetuningConfig`) naming the model's files before anything is read; raises
    `UserInputError` naming the flag and the path: `--init_checkpoint` (a directory with config.json or
    bert_config.json and weights, a Google checkpoint prefix, or a model name), `--vocab_file`,
    `--bert_config_file`, one of `--init_checkpoint`/`--bert_config_file`, a vocabulary (`--vocab_file` or
    the checkpoint's), and `--output_dir` (not a file).

    Examples:

    >>> check_model_flags(FinetuningConfig(init_checkpoint="/tmp/nope", output_dir="/tmp/out"))
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --init_checkpoint: no checkpoint at /tmp/nope (expected a directory with config.json or bert_config.json, a Google checkpoint prefix such as .../bert_model.ckpt, or a Hugging Face model name)
    """
    for flag in ("vocab_file", "bert_config_file"):
        path = getattr(config, flag)
        if path and not os.path.isfile(path):
            raise UserInputError(f"--{flag}: no file at {path}")
    output_dir = config.output_dir
    if output_dir and os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UserInputError(f"--output_dir: {output_dir} is a file, not a directory")
    if not config.init_checkpoint:
        if not config.bert_config_file:
            raise UserInputError("Either --init_checkpoint or --bert_config_file is required (--bert_config_file "
                                 "alone starts from random weights).")
        if not config.vocab_file:
            raise UserInputError("--vocab_file is required without --init_checkpoint.")
        return
    checkpoint = _init_checkpoint(config)
    if checkpoint.config_file is None:
        raise UserInputError(f"--init_checkpoint: {checkpoint.directory} has no {' or '.join(model_files.CONFIG_FILES)}")
    if os.path.isfile(checkpoint.path):
        return  # a config file next to the weights, as `BertBackbone.from_pretrained` reads it
    if not checkpoint.has_weights:
        raise UserInputError(f"--init_checkpoint: {checkpoint.path} has no weights (expected "
                             f"{', '.join(model_files.WEIGHT_FILES)} or a Google bert_model.ckpt.index)")
    if not config.vocab_file and not checkpoint.has_vocabulary:
        raise UserInputError(f"--vocab_file is required: the --init_checkpoint directory {checkpoint.directory} holds "
                             f"no {checkpoint.tokenizer_files}.")


def load_tokenizer(config):
    """The tokenizer of `--vocab_file`, else of the `--init_checkpoint` directory (`config`: a
    `FinetuningConfig`, or any settings with `vocab_file`, `init_checkpoint`, `do_lower_case` and optionally
    `nfkc`); `do_lower_case` and `nfkc` None: the directory's tokenizer_config.json's (else uncased, no NFKC)."""
    kwargs = {} if config.do_lower_case is None else {"do_lower_case": config.do_lower_case}
    nfkc = getattr(config, "nfkc", None)
    if nfkc is not None:
        kwargs["normalize"] = "nfkc" if nfkc else None
    if config.vocab_file:
        if not os.path.isfile(config.vocab_file):
            raise UserInputError(f"--vocab_file: no file at {config.vocab_file}")
        return BertTokenizer(config.vocab_file, **kwargs)
    checkpoint = _init_checkpoint(config) if config.init_checkpoint else None
    if checkpoint is None:
        raise UserInputError("--vocab_file is required without --init_checkpoint.")
    if not checkpoint.has_vocabulary:
        raise UserInputError(f"--vocab_file is required: the --init_checkpoint directory {checkpoint.directory} holds "
                             f"no {checkpoint.tokenizer_files}.")
    return BertTokenizer.from_pretrained(checkpoint.directory, **kwargs)


def model_vocab_size(config):
    """(vocab_size, where it is stated) of the model the settings load: `--bert_config_file`'s (it replaces the
    checkpoint's fields), else the `--init_checkpoint`'s config; None without either."""
    if config.bert_config_file:
        return BertConfig.from_json_file(config.bert_config_file).vocab_size, config.bert_config_file
    if not config.init_checkpoint:
        return None
    checkpoint = _init_checkpoint(config)
    return checkpoint.bert_config().vocab_size, checkpoint.config_file


def check_tokenizer_fits_model(tokenizer, config):
    """Refuses (`UserInputError`) a tokenizer that is not the vocabulary of the model the settings load
    (`model_vocab_size`), before the model is built: more ids than its `vocab_size` (out-of-table ids fail on
    TensorFlow and give NaN losses on JAX), or fewer by more than 1% of them (another model's vocabulary, or
    a vocab.txt cut short: `tokenizers.vocabulary.check_vocab_size`)."""
    found = model_vocab_size(config)
    if found is not None:
        check_vocab_size(tokenizer, *found)


def config_overrides(config, **overrides):
    """Backbone config fields replacing the checkpoint's: `--bert_config_file`'s (when given), then `overrides`.

    The attention direction is replaced only when the file states it (`attention_direction` or
    `is_decoder`): a Google-style bert_config.json, which has neither, keeps a causal checkpoint causal."""
    stored = {}
    if config.bert_config_file:
        stored = BertConfig.from_json_file(config.bert_config_file).to_dict()
        if not {"attention_direction", "is_decoder"} & set(model_files.read_json_object(config.bert_config_file)):
            del stored["attention_direction"]
    return {**stored, **overrides}


def load_backbone(config, output_hidden_states=False, **overrides):
    """The backbone of `--init_checkpoint` (with `--bert_config_file` when given), else a random one of
    `--bert_config_file`; `output_hidden_states` as in `BertBackbone`, `overrides`: config fields."""
    if config.init_checkpoint:
        return BertBackbone.from_pretrained(config.init_checkpoint, output_hidden_states=output_hidden_states,
                                            **config_overrides(config, **overrides))
    if not config.bert_config_file:
        raise UserInputError("Either --init_checkpoint or --bert_config_file is required.")
    bert_config = BertConfig.from_json_file(config.bert_config_file)
    if overrides:
        bert_config = BertConfig.from_dict({**bert_config.to_dict(), **overrides})
    return BertBackbone(bert_config, output_hidden_states=output_hidden_states)


def save_model_directory(model, directory, max_seq_length, extra_config=None, extra_files=None, **save_kwargs):
    """Writes a complete model directory with the model's `save_pretrained`: config.json (with `max_seq_length`
    and the `extra_config` entries), model.safetensors, the tokenizer files of the model's preprocessor (the
    run's tokenizer and sequence length: vocab.txt, tokenizer_config.json with its casing and normalization)
    and `extra_files` ({file name: JSON value}, e.g. NER's label_list.json); each file once.
    `save_kwargs` go to `save_pretrained` (e.g. `label_names`). The directory appears complete or not at all
    (`file_io.atomic_path`), so a run killed while saving never leaves a model directory that looks whole."""
    with atomic_path(directory) as tmp:
        settings = dict(extra_config or {}, **{MAX_SEQ_LENGTH_KEY: int(max_seq_length)})
        model.save_pretrained(tmp, settings=settings, extra_files=extra_files, **save_kwargs)


def warn_cut_examples(tokenizer, texts, pair_texts, features, max_seq_length, split, remedy, what="examples"):
    """One warning when packing `texts` (with `pair_texts`, or None) to `max_seq_length` cut some of them
    (`packing.cut_rows` on the packed rows `features["token_ids"]`): how many of how many, in `split` (e.g.
    "the train set"), and `remedy`, what reads more of them; `what` names them ("examples", "choices").
    The original cuts them without a word; a run says it once per split."""
    lengths = [len(row) for row in features["token_ids"]]
    cut = sum(1 for _ in packing.cut_rows(tokenizer, texts, pair_texts, lengths, max_seq_length))
    if cut:
        warnings.warn(f"{split}: {cut} of {len(texts)} {what} are longer than --max_seq_length={max_seq_length} and "
                      f"are cut to it, as the original cuts them ({remedy}).", stacklevel=2)


def batching_options(config):
    """The padding options of prediction batches (`batching.predict_bucketed`) of a `FinetuningConfig`."""
    return {"dynamic_padding": config.dynamic_padding, "max_length": config.max_seq_length,
            "pad_to_multiple_of": config.pad_to_multiple_of}


@dataclasses.dataclass
class TrainingSet:
    """The training data of a task, as `run_finetuning` feeds it to `model.fit`.

    Attributes:
        features: dict name -> per-example sequences (`bucketed`), or dict name -> arrays [N, T]; or a
            `data.streaming.StreamedExamples` (a training file read epoch by epoch, `bucketed`).
        labels: the labels (per example, or per token), or the label arrays when not `bucketed`; None with a
            `StreamedExamples` (its batches hold them).
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
    """One family of fine-tuning runs on its config, driven by `run_finetuning(task)` in this order:

    `check_flags()` (and the driver's `check_model_flags`); `setup(tokenizer)` (reads and checks every
    file the config names, raising `UserInputError`; the driver then reports the [UNK] tokens of
    `texts_read()`); with --do_train `training_set(distribution)`;
    `build_model()` (loads the checkpoint); with --do_train: `model.compile` with BERT's optimizer and the
    model's loss, `fit` (with `evaluate` after every epoch and the best weights kept when `can_evaluate`;
    resumed from output_dir/checkpoints after a crash), `best_results(metrics)`, `save_model(...)`;
    `evaluate(model)` when `can_evaluate` and there are no results yet; with --do_predict
    `predict(model, results)`; finally `write_results(results)`.

    Attributes:
        name: the task's name in log lines.
        main_metric: the key of `evaluate`'s dict that picks the best epoch.
        config_class: the class of the task's config (`FinetuningConfig` or a subclass).
        config: the task's settings, an instance of `config_class`.
    """

    name = "task"
    main_metric = "accuracy"
    config_class = FinetuningConfig

    def __init__(self, config):
        if not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} takes a {self.config_class.__name__}, got {type(config).__name__}")
        self.config = config
        self.tokenizer = None

    def with_config(self, config):
        """The task on `config`: this task when `config` equals its own, else a fresh task of its class."""
        return self if config == self.config else type(self)(config)

    def check_flags(self):
        """Raises `UserInputError` for flag combinations the task cannot run."""
        if not (self.config.do_train or self.config.do_eval or self.config.do_predict):
            raise UserInputError("At least one of --do_train, --do_eval or --do_predict must be set.")

    def setup(self, tokenizer):
        """Reads what the model and the evaluation need before training (labels, dev sets); checks that the
        tokenizer's ids fit the model's vocab_size (`check_tokenizer_fits_model`)."""
        check_tokenizer_fits_model(tokenizer, self.config)
        self.tokenizer = tokenizer

    @property
    def can_evaluate(self):
        """Whether there is a labelled dev set: then every epoch is evaluated and the best one kept."""
        return bool(self.config.do_eval)

    def texts_read(self):
        """The texts of every file `setup` read (training, dev and test), for the [UNK] report
        (`tokenizers.unknown_tokens.report_unknown_tokens`): a list of str."""
        return []

    def trained_labels(self):
        """The label names the model's head is trained on, in class-id order (recorded with each checkpoint:
        a resumed run on other labels is refused naming both sets); None for a head without labels."""
        return None

    def build_model(self):
        raise NotImplementedError

    def preprocessor_settings(self):
        """The task's settings of its preprocessor besides the tokenizer and the sequence length (e.g. SQuAD's
        `doc_stride`); none by default."""
        return {}

    def run_preprocessor(self, model_class):
        """The preprocessor of the run: `model_class`'s preprocessor class on the run's tokenizer (its casing
        and normalization, from --vocab_file / --do_lower_case / --nfkc or the checkpoint's), at
        --max_seq_length, with the task's `preprocessor_settings`. The model carries it, and its model
        directory's tokenizer files are written from it. None before `setup` (no tokenizer yet)."""
        if self.tokenizer is None:
            return None
        return model_class.preprocessor_class(self.tokenizer, sequence_length=self.config.max_seq_length,
                                              **self.preprocessor_settings())

    def load_model(self, model_class, output_hidden_states=False, **head_arguments):
        """A `model_class` task model (`head_arguments`: its head's, e.g. `num_classes`) with the run's
        preprocessor (`run_preprocessor`), on `--init_checkpoint` (`from_pretrained`: with the checkpoint's head
        when it has a matching one, `--bert_config_file`'s fields replacing the checkpoint's; another task's
        directory is refused unless --ignore_stored_head, which starts a new head), else on a random backbone
        of `--bert_config_file` (`output_hidden_states`: as `BertBackbone`'s)."""
        preprocessor = self.run_preprocessor(model_class)
        if self.config.init_checkpoint:
            return model_class.from_pretrained(self.config.init_checkpoint, **head_arguments, preprocessor=preprocessor,
                                               ignore_stored_head=self.config.ignore_stored_head,
                                               **config_overrides(self.config))
        return model_class(load_backbone(self.config, output_hidden_states=output_hidden_states), **head_arguments,
                           preprocessor=preprocessor)

    def training_loss(self):
        """The loss `run_finetuning` compiles the model with: "auto", the model's own (`default_loss`)."""
        return "auto"

    def training_set(self, distribution):
        """The `TrainingSet` of --do_train; `distribution`: the run's `training.distribute.Distribution` (a
        TPU or a multi-process JAX job trains on whole batches only)."""
        raise NotImplementedError

    def evaluate(self, model):
        """The dev metrics (the paper's metric first among them), a dict."""
        raise NotImplementedError

    def best_results(self, best_metrics):
        """The results after training, from the best epoch's dev metrics (the model holds its weights)."""
        return dict(best_metrics)

    def save_model(self, model, directory, **save_kwargs):
        """Writes the fine-tuned model directory (`save_model_directory`, with `save_kwargs`: `extra_config`,
        `extra_files` and the model's `save_pretrained` arguments, e.g. `label_names`)."""
        save_model_directory(model, directory, self.config.max_seq_length, **save_kwargs)

    def predict(self, model, results):
        """Writes the prediction files of --do_predict; returns the results, with any test metrics added."""
        return results

    def write_results(self, results):
        """Writes eval_results.json (when the task has results to write)."""
        if self.config.do_eval:
            write_json(os.path.join(self.config.output_dir, "eval_results.json"), results)
