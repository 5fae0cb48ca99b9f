"""Export a saved model directory as a TensorFlow SavedModel that takes raw strings.

    python recipes/export_savedmodel.py --model_dir output/sst2/best --export_dir saved_models/sst2

The directory is one written by `save_pretrained` (BertBackbone, BertClassifier, BertTokenClassifier,
BertSpanQA) under any Keras backend, with the tokenizer's `save_pretrained` (vocab.txt,
tokenizer_config.json); this script exports under TensorFlow (`--format=onnx`: under KERAS_BACKEND when it is
set, since that file is written from the weights). A directory without what the export
needs (config.json's architectures / id2label, vocab.txt, tokenizer_config.json's do_lower_case) is refused
unless `--vocab_file` / `--do_lower_case` say it. A token classifier keeps its CRF. A span QA model answers
by the rule of recipes/run_squad.py: `--n_best_size`, `--max_answer_length`, and for SQuAD v2.0
`--null_score_diff_threshold`, each defaulting to config.json's "squad" entry, then to run_squad.py's
defaults. Serve the result with TF Serving, or `tf.saved_model.load` plus `import tensorflow_text`.
The SavedModel is written under a temporary name and renamed once complete. It replaces an earlier export
(a directory holding export_config.json); an `--export_dir` that is a file or a non-empty directory of other
files is refused in one line, leaving it as it is, unless `--overwrite` says to replace it. A mistake in a
flag or in the model directory stops the run with one line and exit status 2 (--debug: the traceback).
"""

import os
import sys


def _requested_format(argv):
    """The value of --format in `argv` (the flags are parsed later, once the backend is set)."""
    for i, arg in enumerate(argv):
        if arg.startswith("--format="):
            return arg.split("=", 1)[1]
        if arg == "--format" and i + 1 < len(argv):
            return argv[i + 1]
    return "savedmodel"


if _requested_format(sys.argv[1:]) == "onnx":
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")  # written from the weights under any backend
else:
    os.environ["KERAS_BACKEND"] = "tensorflow"  # a TensorFlow graph, whatever trained the model

from keras_bert_impl.runners.export_savedmodel import build_parser, main, run  # noqa: E402, F401

if __name__ == "__main__":
    main()
