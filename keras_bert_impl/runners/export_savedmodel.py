"""Export a saved model directory as a TensorFlow SavedModel that takes raw strings.

    python -m keras_bert_impl.runners.export_savedmodel --model_dir output/sst2/best --export_dir saved_models/sst2

The directory is one written by `save_pretrained` (BertBackbone, BertClassifier, BertTokenClassifier,
BertSpanQA) under any Keras backend, with the tokenizer's `save_pretrained` (vocab.txt,
tokenizer_config.json); the export runs under TensorFlow: `python recipes/export_savedmodel.py` sets
KERAS_BACKEND=tensorflow itself, `python -m keras_bert_impl.runners.export_savedmodel` refuses another
backend. A directory without what the export
needs (config.json's architectures / id2label, vocab.txt, tokenizer_config.json's do_lower_case) is refused
unless `--vocab_file` / `--do_lower_case` say it. A token classifier keeps its CRF. A span QA model answers
by the rule of recipes/run_squad.py: `--n_best_size`, `--max_answer_length`, and for SQuAD v2.0
`--null_score_diff_threshold`, each defaulting to config.json's "squad" entry, then to run_squad.py's
defaults. Serve the result with TF Serving, or `tf.saved_model.load` plus `import tensorflow_text`.
`--format=litert` and `--format=onnx` write instead the model on token ids, `model.tflite` (LiteRT builtins
only: the stock interpreter runs it; `--quantization=dynamic_int8` for LiteRT's int8 weights) or `model.onnx`
(dynamic batch and sequence axes, for onnxruntime), outputs named for what they are (`logits`, ...), beside a
model directory's config.json (labels, max_position_embeddings), vocab.txt and tokenizer_config.json (casing,
normalization, max length) and `export_config.json` (task, inputs, outputs): `pipeline(task,
model=export_dir)` answers from it through onnxruntime or LiteRT (docs/deployment.md).
`--quantization=dynamic_int8` gives either file int8 weights for its products.
The SavedModel is written under a temporary name and renamed once complete. It replaces an earlier export
(a directory holding export_config.json); an `--export_dir` that is a file or a non-empty directory of other
files is refused in one line, leaving it as it is, unless `--overwrite` says to replace it; an `--export_dir` that
is the `--model_dir`, lies inside it or holds it is refused, with `--overwrite` too. A mistake in a
flag or in the model directory stops the run with one line and exit status 2 (--debug: the traceback).
"""

import dataclasses
import logging
import os
from typing import Optional

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.optional_dependencies import require
from keras_bert_impl.utils.settings import BOOLEAN, INTEGER, NUMBER, one_of, optional, setting

logger = logging.getLogger(__name__)

# --format -> the feature's name, its extra and the packages it imports.
FORMAT_REQUIREMENTS = {
    "savedmodel": ("SavedModel export", "tensorflow", ("tensorflow", "tensorflow_text")),
    "litert": ("LiteRT export", "export", ("tensorflow",)),
    "onnx": ("ONNX export", "onnx", ("onnx",)),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExportConfig:
    """The settings of an export, one per flag; None: the model directory's (see the module docstring)."""

    model_dir: str = setting(help="Directory written by save_pretrained.")
    export_dir: str = setting(help="Where the SavedModel goes, e.g. saved_models/NAME.")
    vocab_file: Optional[str] = setting(None, help="Default: the model directory's vocab.txt.")
    do_lower_case: Optional[bool] = setting(None, optional(BOOLEAN), "Lower-case the input. Default: "
                                            "tokenizer_config.json's.")
    max_seq_length: Optional[int] = setting(None, optional(INTEGER), "Tokens per input. Default: config.json's "
                                            "max_seq_length, else 128.")
    text_pair: bool = setting(False, BOOLEAN, "The classifier takes a text pair (text, text_pair).")
    version_2_with_negative: Optional[bool] = setting(None, optional(BOOLEAN), "SQuAD v2.0 model (may answer ''). "
                                                      "Default: config.json's squad entry, or a threshold given.")
    null_score_diff_threshold: Optional[float] = setting(None, optional(NUMBER), "SQuAD v2.0 models: answer '' when "
                                                         "the null score wins by more than this.")
    max_answer_length: Optional[int] = setting(None, optional(INTEGER), "Longest answer in tokens (default 30).")
    n_best_size: Optional[int] = setting(None, optional(INTEGER), "Candidate starts and ends per question, as "
                                         "run_squad.py (default 20).")
    overwrite: bool = setting(False, BOOLEAN, "Replace --export_dir even when it holds other files than an earlier "
                              "export (without it, such a directory is refused and left as it is).")
    format: str = setting("savedmodel", one_of(("savedmodel", "litert", "onnx")), "savedmodel (raw strings in, "
                          "answers out), or the model on token ids as litert (model.tflite) or onnx (model.onnx).")
    quantization: str = setting("none", one_of(("none", "dynamic_int8")), "--format=litert or onnx: int8 weights "
                                "for the products, activations quantized per call (LiteRT's dynamic-range, "
                                "onnxruntime's dynamic quantization).")


def build_parser():
    """The argument parser: a flag per field of `ExportConfig`."""
    return settings_parser(ExportConfig, __doc__.split("\n")[0])


def check_dependencies(settings):
    """Refuses a `--format` whose packages are not installed, in one line naming its extra, before Keras is
    imported (under KERAS_BACKEND=tensorflow, Keras itself needs TensorFlow) and before anything is written;
    `settings`: the parsed flags or an `ExportConfig`."""
    require(*FORMAT_REQUIREMENTS[settings.format])
    if settings.format == "onnx" and settings.quantization != "none":
        require("ONNX int8 quantization", "onnx", ("onnxruntime",))


def run(args):
    """Exports `--model_dir` to `--export_dir`; returns (task name, export directory)."""
    return export(config_from_flags(ExportConfig, args))


def export(config):
    """Exports `config.model_dir` to `config.export_dir` as `config` (an `ExportConfig`) says; returns (task name,
    export directory)."""
    check_dependencies(config)
    import keras  # imported once the flags are parsed: --help answers without Keras and TensorFlow

    if not os.path.isdir(config.model_dir):
        raise UserInputError(f"--model_dir: no directory at {config.model_dir}")
    from keras_bert_impl.export.export_settings import check_export_dir, check_export_source

    check_export_source(config.model_dir, config.export_dir)
    if keras.backend.backend() != "tensorflow" and config.format != "onnx":
        raise UserInputError(f"the {config.format} export is a TensorFlow graph: run it with KERAS_BACKEND=tensorflow "
                             f"(not {keras.backend.backend()}), or run recipes/export_savedmodel.py, which sets it.")
    if config.quantization != "none" and config.format == "savedmodel":
        raise UserInputError(f"--quantization={config.quantization} applies to --format=litert and --format=onnx only.")

    check_export_dir(config.export_dir, config.overwrite)
    try:
        if config.format != "savedmodel":
            return _export_token_id_model(config)
        from keras_bert_impl.export.tf_saved_model import export_from_directory  # TensorFlow

        task, export_dir = export_from_directory(
            config.model_dir, config.export_dir, vocab_file=config.vocab_file, max_seq_length=config.max_seq_length,
            text_pair=config.text_pair, null_score_diff_threshold=config.null_score_diff_threshold,
            do_lower_case=config.do_lower_case, max_answer_length=config.max_answer_length,
            n_best_size=config.n_best_size, version_2_with_negative=config.version_2_with_negative,
            overwrite=config.overwrite,
        )
    except UserInputError:
        raise
    except ValueError as error:  # a directory lacking what the export needs: its message names the file
        raise UserInputError(str(error)) from error
    logger.info(f"Exported the {task} of {config.model_dir} to {export_dir}")
    return task, export_dir


def _export_token_id_model(config):
    """`--format` litert or onnx: the model file in `--export_dir`, beside the files of a model directory that
    its tokenizer and `pipeline(task, model=export_dir)` read (`export.export_settings.write_runtime_files`)."""
    from keras_bert_impl.export.export_settings import (
        SERVING_KINDS,
        load_model,
        read_export_settings,
        write_runtime_files,
    )

    settings = read_export_settings(config.model_dir, config.vocab_file, config.do_lower_case)
    model, task = load_model(settings)
    checkpoint = settings["checkpoint"]
    max_seq_length = int(config.max_seq_length or SERVING_KINDS[task].sequence_length(model, checkpoint)
                         or min(128, checkpoint.bert_config().max_position_embeddings))
    os.makedirs(config.export_dir, exist_ok=True)
    if config.format == "litert":
        from keras_bert_impl.export.tf_litert import export_litert

        path = export_litert(model, os.path.join(config.export_dir, "model.tflite"),
                             quantization=None if config.quantization == "none" else config.quantization)
    else:
        from keras_bert_impl.export.onnx_export import export_onnx

        path = export_onnx(model, os.path.join(config.export_dir, "model.onnx"),
                           quantization=None if config.quantization == "none" else config.quantization)
    write_runtime_files(config.export_dir, model, settings, task, max_seq_length,
                        {"format": config.format, "quantization": config.quantization})
    logger.info(f"Exported the {task} of {config.model_dir} to {path}")
    return task, path


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv, before_import=check_dependencies)


if __name__ == "__main__":
    main()
