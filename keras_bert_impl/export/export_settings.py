"""What the export of a model directory reads from it: the task of the class it holds (`CLASS_TASKS`), its
labels and tokenizer settings (`read_export_settings`), the SQuAD windows and answer rule of a span QA model
(`squad_settings`), and the model itself (`load_model`); `check_export_source` keeps an export off the model
directory it reads. Shared by the SavedModel export
(`export.tf_saved_model.export_from_directory`) and the LiteRT / ONNX exports of
recipes/export_savedmodel.py; no TensorFlow here.
"""

import os

from keras_bert_impl.checkpoints import model_io, task_layouts
from keras_bert_impl.data.swag_data import NUM_CHOICES
from keras_bert_impl.tasks.squad import decoding_settings
from keras_bert_impl.tasks.swag import NUM_CHOICES_KEY
from keras_bert_impl.utils import file_io, model_files
from keras_bert_impl.utils.errors import UserInputError

# The export task of each model class a directory may hold (`checkpoints.task_layouts`); a pretraining
# directory exports its backbone. BertClassifier with one output exports as "regressor".
CLASS_TASKS = {
    "BertBackbone": "backbone",
    "BertPretrainer": "backbone",
    "BertClassifier": "classifier",
    "BertTokenClassifier": "token_classifier",
    "BertFeatureBasedTagger": "token_classifier",
    "BertSpanQA": "span_qa",
    "BertMultipleChoice": "multiple_choice",
    "BertSentenceEncoder": "sentence_encoder",
}


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

    Needs config.json with `architectures` (the class it names, `model_io.model_class`, one of `CLASS_TASKS`)
    and, for a classifier or token classifier, `id2label`; vocab.txt unless `vocab_file` is given;
    tokenizer_config.json with `do_lower_case` unless `do_lower_case` is given (a cased model is never served
    lower-cased by default).

    Returns:
        dict: task, model_class, labels (list or None), vocab_file, do_lower_case, normalize
        (tokenizer_config.json's, None without it), checkpoint (its `ModelDirectory`).
    """
    checkpoint = model_io.open_checkpoint(os.fspath(model_dir).rstrip("/"))
    config_path = os.path.join(checkpoint.directory, model_files.CONFIG_FILE)
    if checkpoint.config_file != config_path:
        raise ValueError(f"{config_path}: missing; export needs the config.json that save_pretrained writes.")
    exportable = [architecture for name, layout in task_layouts.LAYOUTS.items() if name in CLASS_TASKS
                  for architecture in layout.architectures]
    if not checkpoint.architecture:
        raise ValueError(f"{config_path}: no 'architectures' field; export reads the task from it "
                         f"(one of {', '.join(dict.fromkeys(exportable))}).")
    model_class = model_io.model_class(checkpoint)
    if model_class.__name__ not in CLASS_TASKS or (checkpoint.architecture not in exportable
                                                   and model_class.__name__ != "BertFeatureBasedTagger"):
        raise ValueError(f"{config_path}: architecture {checkpoint.architecture!r} cannot be exported; known: "
                         f"{', '.join(dict.fromkeys(exportable))}.")
    task = CLASS_TASKS[model_class.__name__]
    labels = checkpoint.label_names
    if labels is None and task in ("classifier", "token_classifier"):
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
    return {"task": task, "model_class": model_class, "labels": labels, "vocab_file": vocab_file,
            "do_lower_case": bool(do_lower_case), "normalize": checkpoint.tokenizer_config.get("normalize"),
            "checkpoint": checkpoint}


def squad_settings(config, version_2_with_negative=None, null_score_diff_threshold=None, max_answer_length=None,
                   n_best_size=None, doc_stride=None, max_query_length=None):
    """The windows and the SQuAD answer rule of a span QA export: `tasks.squad.decoding_settings` (arguments
    given, not None, then config.json's `"squad"` entry, then run_squad.py's defaults).

    Returns:
        dict with null_score_diff_threshold (None for v1.1), max_answer_length, n_best_size, doc_stride,
        max_query_length.
    """
    settings = decoding_settings(
        config.get("squad"), version_2_with_negative=version_2_with_negative,
        null_score_diff_threshold=null_score_diff_threshold, max_answer_length=max_answer_length,
        n_best_size=n_best_size, doc_stride=doc_stride, max_query_length=max_query_length)
    threshold = settings["null_score_diff_threshold"] if settings["version_2_with_negative"] else None
    return {"null_score_diff_threshold": None if threshold is None else float(threshold),
            **{key: int(settings[key]) for key in ("max_answer_length", "n_best_size", "doc_stride",
                                                   "max_query_length")}}


def load_model(settings):
    """(model, task) of the directory `read_export_settings` read: the model of its class with its weights,
    and its task, "regressor" for a classifier with one label or config.json's problem_type "regression"."""
    task, labels, checkpoint = settings["task"], settings["labels"], settings["checkpoint"]
    if task == "backbone":
        from keras_bert_impl.models.backbone import BertBackbone

        return BertBackbone.from_pretrained(checkpoint), task
    if task in ("span_qa", "sentence_encoder"):
        return settings["model_class"].from_pretrained(checkpoint), task
    if task == "multiple_choice":
        num_choices = int(checkpoint.setting(NUM_CHOICES_KEY) or NUM_CHOICES)
        return settings["model_class"].from_pretrained(checkpoint, num_choices=num_choices), task
    # a classifier, a token classifier (with its CRF, if any) or a feature-based tagger
    model = settings["model_class"].from_pretrained(checkpoint, num_classes=len(labels))
    if task == "classifier" and (len(labels) == 1 or checkpoint.setting("problem_type") == "regression"):
        task = "regressor"
    return model, task
