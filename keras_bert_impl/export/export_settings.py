"""What the export of a model directory reads from it: the serving kind of the class it holds (its
registration, `checkpoints.task_registry`), its labels and tokenizer settings (`read_export_settings`), the
model itself (`load_model`), and the SQuAD windows and answer rule of a span QA model (`squad_settings`);
what a LiteRT or ONNX export folder holds beside its model file (`write_runtime_files`; the outputs'
names, `named_outputs`); `check_export_source` keeps an export off the model directory it reads; `check_export_dir`, whether an
export may replace a directory. Shared by the SavedModel export
(`export.tf_saved_model.export_from_directory`) and the LiteRT / ONNX exports of recipes/export_savedmodel.py;
no TensorFlow here.

`SERVING_KINDS` is the export's table of serving kinds (what a class registers as `serving`, or its model's
`serving_kind()` says): what each needs from the directory and what its `export_config.json` records of the
model. The graph of each kind's signatures is `export.tf_saved_model`'s.
"""

import dataclasses
import os
from typing import Callable

from keras_bert_impl.checkpoints import model_io, task_registry
from keras_bert_impl.checkpoints.model_directory import MAX_SEQ_LENGTH_KEY
from keras_bert_impl.layers.crf import CRF
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.span_qa import decoding_settings
from keras_bert_impl.pipelines.runtime_model import EXPORT_CONFIG_FILE
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils import file_io, model_files
from keras_bert_impl.utils.errors import UserInputError

# The settings file of every export directory: what an export holds (and, present, that a directory is one).
EXPORT_CONFIG_NAME = "export_config.json"


@dataclasses.dataclass(frozen=True)
class ServingKind:
    """What the export of one serving kind needs and records.

    Attributes:
        needs_labels: its answers name labels (config.json's `id2label`), one per output class (`num_classes`).
        pools_windows: a classifier of single texts, which may classify a long text by its windows (`long_input`).
        serves_backbone: the export serves the directory's backbone (a pretraining directory's too).
        record: model -> the entries of export_config.json that this kind adds.
        settings: (model, its directory, the export's decoding arguments) -> the `export_saved_model` arguments
            the model answers with that its directory records (a classifier's `long_input`, a span QA model's
            windows and answer rule).
        sequence_length: (model, its directory) -> the packed length the directory records, or None (the
            directory's `max_seq_length`; a sentence encoder's preprocessor's, from sentence_bert_config.json).
    """

    needs_labels: bool = False
    pools_windows: bool = False
    serves_backbone: bool = False
    record: Callable = lambda model: {}
    settings: Callable = lambda model, checkpoint, given: {}
    sequence_length: Callable = lambda model, checkpoint: checkpoint.max_seq_length


def _long_input(model, checkpoint, given):
    """The `long_input` mode the directory records (its preprocessor class's `directory_settings`)."""
    return {"long_input": model.preprocessor_class.directory_settings(checkpoint).get("long_input", "truncate")}


SERVING_KINDS = {
    "backbone": ServingKind(serves_backbone=True),
    "classifier": ServingKind(needs_labels=True, pools_windows=True, settings=_long_input),
    "regressor": ServingKind(pools_windows=True, settings=_long_input),
    "token_classifier": ServingKind(needs_labels=True,
                                    record=lambda model: {"use_crf": bool(getattr(model, "use_crf", False))}),
    "span_qa": ServingKind(settings=lambda model, checkpoint, given: served_decoding(model.decoding_settings(**given))),
    "multiple_choice": ServingKind(record=lambda model: {"num_choices": int(model.num_choices)}),
    "sentence_encoder": ServingKind(sequence_length=lambda model, checkpoint: (
        checkpoint.max_seq_length if model.preprocessor is None else model.preprocessor.sequence_length)),
}


def named_outputs(model):
    """{name: output tensor} of `model`: the keys of a dict of outputs, else each output named by the layer that
    computes it, looking through a CRF (which passes its input on): a classifier's and a tagger's "logits".

    Examples:

    >>> from keras_bert_impl import BertBackbone, BertClassifier, BertConfig
    >>> model = BertClassifier(BertBackbone(BertConfig.preset("bert_tiny", vocab_size=8)), num_classes=2)
    >>> list(named_outputs(model))
    ['logits']
    """
    if isinstance(model.output, dict):
        return dict(model.output)
    named = {}
    for tensor in (model.output if isinstance(model.output, (list, tuple)) else [model.output]):
        layer = _layer_computing(model, tensor)
        while isinstance(layer, CRF):
            layer = _layer_computing(model, layer.input)
        named[layer.name] = tensor
    return named


def _layer_computing(model, tensor):
    return next(layer for layer in model.layers if layer.output is tensor)


def serving_kind(model):
    """The serving kind of a model: its `serving_kind()` (a task model's may depend on its settings), else its
    class's registered one (a backbone's)."""
    own = getattr(model, "serving_kind", None)
    return own() if own is not None else task_registry.entry_of(model).serving


def exportable_architectures():
    """The architectures of the registered classes that have a serving kind, in registration order."""
    return list(dict.fromkeys(a for entry in task_registry.entries() if entry.serving in SERVING_KINDS
                              for a in entry.architectures))
def check_export_source(model_dir, export_dir):
    """Refuses (`UserInputError`, one line) an `export_dir` that is the `model_dir` the export reads, lies inside
    it or holds it: writing the export there would write over the model (`--overwrite` or not).

    Examples:

    >>> check_export_source("runs/sst2/model", "saved_models/sst2")
    >>> check_export_source("runs/sst2/model", "runs/sst2/model/")
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --export_dir runs/sst2/model/ is the --model_dir itself: the export would write over the model it reads; choose another --export_dir
    >>> check_export_source("runs/sst2/model", "runs")
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --export_dir runs holds --model_dir runs/sst2/model: the export would write over the model it reads; choose another --export_dir
    """
    inside, holds = file_io.is_within(export_dir, model_dir), file_io.is_within(model_dir, export_dir)
    if inside or holds:
        where = ("is the --model_dir itself" if inside and holds else
                 f"lies inside --model_dir {model_dir}" if inside else f"holds --model_dir {model_dir}")
        raise UserInputError(f"--export_dir {export_dir} {where}: the export would write over the model it reads; "
                             "choose another --export_dir")


def read_export_settings(model_dir, vocab_file=None, do_lower_case=None):
    """What export needs from a `save_pretrained` directory, or a one-line `ValueError` naming the missing
    file or field (the message starts with its path).

    Needs config.json with `architectures` (the registered class it names, `task_registry.stored_entry`, with a
    serving kind) and, for a kind that names labels, `id2label`; vocab.txt unless `vocab_file` is given;
    tokenizer_config.json with `do_lower_case` unless `do_lower_case` is given (a cased model is never served
    lower-cased by default).

    Returns:
        dict: task (the class's serving kind), model_class, labels (list or None), vocab_file, do_lower_case,
        normalize (tokenizer_config.json's, None without it), checkpoint (its `ModelDirectory`).
    """
    checkpoint = model_io.open_checkpoint(os.fspath(model_dir).rstrip("/"))
    config_path = os.path.join(checkpoint.directory, model_files.CONFIG_FILE)
    if checkpoint.config_file != config_path:
        raise ValueError(f"{config_path}: missing; export needs the config.json that save_pretrained writes.")
    exportable = ", ".join(exportable_architectures())
    if not checkpoint.architecture:
        raise ValueError(f"{config_path}: no 'architectures' field; export reads the task from it (one of {exportable}).")
    entry = task_registry.stored_entry(checkpoint)
    if entry.serving not in SERVING_KINDS:
        raise ValueError(f"{config_path}: architecture {checkpoint.architecture!r} cannot be exported; known: "
                         f"{exportable}.")
    task = entry.serving
    labels = checkpoint.label_names
    if labels is None and SERVING_KINDS[task].needs_labels:
        raise ValueError(f"{config_path}: no 'id2label' field; export of a {task} needs its label names.")

    if vocab_file is None:
        vocab_file = checkpoint.vocab_file
        if vocab_file is None:
            raise ValueError(f"{os.path.join(checkpoint.directory, model_files.VOCAB_FILE)}: missing; save the "
                             "tokenizer with tokenizer.save_pretrained(model_dir) or pass --vocab_file.")
    elif not os.path.isfile(vocab_file):
        raise ValueError(f"{vocab_file}: no such vocabulary file (--vocab_file).")
    if do_lower_case is None:
        tokenizer_config_path = os.path.join(checkpoint.directory, model_files.TOKENIZER_CONFIG_FILE)
        if not os.path.isfile(tokenizer_config_path):
            raise ValueError(f"{tokenizer_config_path}: missing; export needs its do_lower_case (save the tokenizer "
                             "with tokenizer.save_pretrained(model_dir), or pass --do_lower_case).")
        if "do_lower_case" not in checkpoint.tokenizer_config:
            raise ValueError(f"{tokenizer_config_path}: no 'do_lower_case' field; export needs it "
                             "(or pass --do_lower_case true/false).")
        do_lower_case = checkpoint.tokenizer_config["do_lower_case"]
    return {"task": task, "model_class": entry.model_class, "labels": labels, "vocab_file": vocab_file,
            "do_lower_case": bool(do_lower_case), "normalize": checkpoint.tokenizer_config.get("normalize"),
            "checkpoint": checkpoint}


def served_decoding(settings):
    """The SQuAD rule of a span QA export from `decoding_settings`' dict: `null_score_diff_threshold` None for
    v1.1, the integer settings as ints."""
    threshold = settings["null_score_diff_threshold"] if settings["version_2_with_negative"] else None
    return {"null_score_diff_threshold": None if threshold is None else float(threshold),
            **{key: int(settings[key]) for key in ("max_answer_length", "n_best_size", "doc_stride",
                                                   "max_query_length")}}


def squad_settings(config, version_2_with_negative=None, null_score_diff_threshold=None, max_answer_length=None,
                   n_best_size=None, doc_stride=None, max_query_length=None):
    """The windows and the SQuAD answer rule of a span QA export from a config.json dict: `decoding_settings`
    (arguments given, not None, then config.json's `"squad"` entry, then run_squad.py's defaults).

    Returns:
        dict with null_score_diff_threshold (None for v1.1), max_answer_length, n_best_size, doc_stride,
        max_query_length.
    """
    return served_decoding(decoding_settings(
        config.get("squad"), version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold, max_answer_length=max_answer_length,
        n_best_size=n_best_size, doc_stride=doc_stride, max_query_length=max_query_length))


def load_model(settings):
    """(model, task) of the directory `read_export_settings` read: the model of its class with its weights
    (`from_pretrained`; the backbone alone for a kind that serves it; as many classes as labels for a kind that
    names them), and its serving kind (the model's `serving_kind()`: "regressor" for a classifier of one
    output)."""
    kind, labels, checkpoint = SERVING_KINDS[settings["task"]], settings["labels"], settings["checkpoint"]
    if kind.serves_backbone:
        return BertBackbone.from_pretrained(checkpoint), settings["task"]
    arguments = {"num_classes": len(labels)} if kind.needs_labels else {}
    model = settings["model_class"].from_pretrained(checkpoint, **arguments)
    return model, serving_kind(model)


def write_runtime_files(export_dir, model, settings, task, max_seq_length, extra=None):
    """Writes beside an exported token-id model (model.onnx / model.tflite) what its runtime's callers read, as
    a model directory has it, so one reader (`checkpoints.model_directory.ModelDirectory`) serves both:
    config.json (the source's: architectures, id2label, max_position_embeddings, ..., with `max_seq_length`),
    vocab.txt and tokenizer_config.json (casing, normalization, max length: `BertTokenizer.save_pretrained`),
    and export_config.json (format, task, labels, do_lower_case, max_seq_length, max_position_embeddings,
    the model's inputs and its `named_outputs`, `dict_outputs`: whether the model returns them as a dict (a
    one-tensor model, as a classifier's `logits` or a sentence encoder's `split_columns`, returns that tensor),
    and `extra`).

    Args:
        export_dir: the export's folder.
        model: the exported model.
        settings: what `read_export_settings` read from the model directory.
        task: the export task (`load_model`'s).
        max_seq_length: tokens per input the callers pack.
        extra: more entries of export_config.json.
    """
    checkpoint = settings["checkpoint"]
    tokenizer = BertTokenizer(settings["vocab_file"], do_lower_case=settings["do_lower_case"],
                              normalize=settings["normalize"])
    tokenizer.save_pretrained(export_dir, sequence_length=max_seq_length)
    config = {**checkpoint.config, MAX_SEQ_LENGTH_KEY: int(max_seq_length)}
    file_io.write_json(os.path.join(export_dir, model_files.CONFIG_FILE), config)
    positions = checkpoint.bert_config().max_position_embeddings
    file_io.write_json(os.path.join(export_dir, EXPORT_CONFIG_FILE), {
        **(extra or {}), "task": task, "labels": settings["labels"], "do_lower_case": settings["do_lower_case"],
        "max_seq_length": int(max_seq_length), "max_position_embeddings": positions,
        "inputs": sorted(model.input), "outputs": list(named_outputs(model)),
        "dict_outputs": isinstance(model.output, dict)})


def check_export_dir(export_dir, overwrite=False):
    """Refuses to replace `export_dir` when it is not an earlier export (see the module docstring).

    Raises:
        UserInputError: `export_dir` is a file, or a non-empty directory without `export_config.json`, and
            not `overwrite`.

    Examples:

    >>> import tempfile
    >>> directory = tempfile.mkdtemp()
    >>> check_export_dir(os.path.join(directory, "new"))  # absent or empty: written
    >>> open(os.path.join(directory, "README.md"), "w").close()
    >>> check_export_dir(directory)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: --export_dir: ... holds files that are not an export of this package (no export_config.json; README.md): an export would replace them; pass --overwrite to replace them, or choose another --export_dir
    >>> check_export_dir(directory, overwrite=True)
    """
    if overwrite or not os.path.lexists(export_dir):
        return
    if not os.path.isdir(export_dir):
        raise UserInputError(f"--export_dir: {export_dir} is a file: an export would replace it; pass --overwrite to "
                             "replace it, or choose another --export_dir")
    names = sorted(os.listdir(export_dir))
    if names and EXPORT_CONFIG_NAME not in names:
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} entries)" if len(names) > 3 else "")
        raise UserInputError(f"--export_dir: {export_dir} holds files that are not an export of this package (no "
                             f"{EXPORT_CONFIG_NAME}; {shown}): an export would replace them; pass --overwrite to "
                             "replace them, or choose another --export_dir")
