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
(dynamic batch and sequence axes, for onnxruntime), beside `vocab.txt` and `export_config.json` (task,
labels, do_lower_case, max_seq_length, inputs): the text is tokenized by the caller (docs/deployment.md).
The SavedModel is written under a temporary name and renamed once complete. It replaces an earlier export
(a directory holding export_config.json); an `--export_dir` that is a file or a non-empty directory of other
files is refused in one line, leaving it as it is, unless `--overwrite` says to replace it; an `--export_dir` that
is the `--model_dir`, lies inside it or holds it is refused, with `--overwrite` too. A mistake in a
flag or in the model directory stops the run with one line and exit status 2 (--debug: the traceback).
"""

import os

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import FlagParser
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.optional_dependencies import require

# --format -> the feature's name, its extra and the packages it imports.
FORMAT_REQUIREMENTS = {
    "savedmodel": ("SavedModel export", "tensorflow", ("tensorflow", "tensorflow_text")),
    "litert": ("LiteRT export", "export", ("tensorflow",)),
    "onnx": ("ONNX export", "export", ("tensorflow", "tf2onnx", "onnx")),
}


def build_parser():
    parser = FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True, help="Directory written by save_pretrained.")
    parser.add_argument("--export_dir", required=True, help="Where the SavedModel goes, e.g. saved_models/NAME.")
    parser.add_argument("--vocab_file", default=None, help="Default: the model directory's vocab.txt.")
    parser.add_bool_flag("do_lower_case", None, "Lower-case the input. Default: tokenizer_config.json's.")
    parser.add_argument("--max_seq_length", type=int, default=None,
                        help="Tokens per input. Default: config.json's max_seq_length, else 128.")
    parser.add_bool_flag("text_pair", False, "The classifier takes a text pair (text, text_pair).")
    parser.add_bool_flag("version_2_with_negative", None,
                         "SQuAD v2.0 model (may answer ''). Default: config.json's squad entry, or a threshold given.")
    parser.add_argument("--null_score_diff_threshold", type=float, default=None,
                        help="SQuAD v2.0 models: answer '' when the null score wins by more than this.")
    parser.add_argument("--max_answer_length", type=int, default=None, help="Longest answer in tokens (default 30).")
    parser.add_argument("--n_best_size", type=int, default=None,
                        help="Candidate starts and ends per question, as run_squad.py (default 20).")
    parser.add_bool_flag("overwrite", False, "Replace --export_dir even when it holds other files than an earlier "
                         "export (without it, such a directory is refused and left as it is).")
    parser.add_argument("--format", default="savedmodel", choices=["savedmodel", "litert", "onnx"],
                        help="savedmodel (raw strings in, answers out), or the model on token ids as "
                             "litert (model.tflite) or onnx (model.onnx).")
    parser.add_argument("--quantization", default="none", choices=["none", "dynamic_int8"],
                        help="--format=litert: LiteRT's dynamic-range int8 weights.")
    return parser


def check_dependencies(args):
    """Refuses a `--format` whose packages are not installed, in one line naming its extra, before Keras is
    imported (under KERAS_BACKEND=tensorflow, Keras itself needs TensorFlow) and before anything is written."""
    require(*FORMAT_REQUIREMENTS[args.format])


def run(args):
    """Exports `--model_dir` to `--export_dir`; returns (task name, export directory)."""
    check_dependencies(args)
    import keras  # imported once the flags are parsed: --help answers without Keras and TensorFlow

    if not os.path.isdir(args.model_dir):
        raise UserInputError(f"--model_dir: no directory at {args.model_dir}")
    from keras_bert_impl.export.export_settings import check_export_source

    check_export_source(args.model_dir, args.export_dir)
    if keras.backend.backend() != "tensorflow":
        raise UserInputError(f"the export is a TensorFlow graph: run it with KERAS_BACKEND=tensorflow (not "
                             f"{keras.backend.backend()}), or run recipes/export_savedmodel.py, which sets it.")
    if args.quantization != "none" and args.format != "litert":
        raise UserInputError(f"--quantization={args.quantization} applies to --format=litert only.")
    from keras_bert_impl.export.tf_saved_model import check_export_dir, export_from_directory  # TensorFlow

    check_export_dir(args.export_dir, args.overwrite)
    try:
        if args.format != "savedmodel":
            return _export_token_id_model(args)
        task, export_dir = export_from_directory(
            args.model_dir, args.export_dir, vocab_file=args.vocab_file, max_seq_length=args.max_seq_length,
            text_pair=args.text_pair, null_score_diff_threshold=args.null_score_diff_threshold,
            do_lower_case=args.do_lower_case, max_answer_length=args.max_answer_length,
            n_best_size=args.n_best_size, version_2_with_negative=args.version_2_with_negative,
            overwrite=args.overwrite,
        )
    except UserInputError:
        raise
    except ValueError as error:  # a directory lacking what the export needs: its message names the file
        raise UserInputError(str(error)) from error
    print(f"Exported the {task} of {args.model_dir} to {export_dir}")
    return task, export_dir


def _export_token_id_model(args):
    """`--format` litert or onnx: the model file, vocab.txt and export_config.json in `--export_dir`."""
    import shutil

    from keras_bert_impl.export.export_settings import load_model, read_export_settings
    from keras_bert_impl.utils.file_io import write_json

    settings = read_export_settings(args.model_dir, args.vocab_file, args.do_lower_case)
    model, task = load_model(settings)
    os.makedirs(args.export_dir, exist_ok=True)
    if args.format == "litert":
        from keras_bert_impl.export.tf_litert import export_litert

        path = export_litert(model, os.path.join(args.export_dir, "model.tflite"),
                             quantization=None if args.quantization == "none" else args.quantization)
    else:
        from keras_bert_impl.export.onnx_export import export_onnx

        path = export_onnx(model, os.path.join(args.export_dir, "model.onnx"))
    shutil.copyfile(settings["vocab_file"], os.path.join(args.export_dir, "vocab.txt"))
    write_json(os.path.join(args.export_dir, "export_config.json"), {
        "format": args.format, "task": task, "labels": settings["labels"], "do_lower_case": settings["do_lower_case"],
        "max_seq_length": int(args.max_seq_length or settings["checkpoint"].setting("max_seq_length") or 128),
        "inputs": sorted(model.input), "quantization": args.quantization})
    print(f"Exported the {task} of {args.model_dir} to {path}")
    return task, path


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv, before_import=check_dependencies)


if __name__ == "__main__":
    main()
