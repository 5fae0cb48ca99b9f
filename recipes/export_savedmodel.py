"""Export a saved model directory as a TensorFlow SavedModel that takes raw strings.

    python recipes/export_savedmodel.py --model_dir output/sst2/best --export_dir saved_models/sst2

The directory is one written by `save_pretrained` (BertBackbone, BertClassifier, BertTokenClassifier,
BertSpanQA) under any Keras backend; this script always exports under TensorFlow. Serve the result with
TF Serving, or `tf.saved_model.load` plus `import tensorflow_text`.
"""

import os

os.environ["KERAS_BACKEND"] = "tensorflow"  # the export is a TensorFlow graph, whatever trained the model
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_bert_impl.runners.flags import FlagParser  # noqa: E402


def build_parser():
    parser = FlagParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True, help="Directory written by save_pretrained.")
    parser.add_argument("--export_dir", required=True, help="Where the SavedModel goes, e.g. saved_models/NAME.")
    parser.add_argument("--vocab_file", default=None, help="Default: the model directory's vocab.txt.")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_bool_flag("text_pair", False, "The classifier takes a text pair (text, text_pair).")
    parser.add_argument("--null_score_diff_threshold", type=float, default=None,
                        help="SQuAD v2.0 models: answer '' when the null score wins by more than this.")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    from keras_bert_impl.export.tf_saved_model import export_from_directory

    task, export_dir = export_from_directory(
        args.model_dir, args.export_dir, vocab_file=args.vocab_file, max_seq_length=args.max_seq_length,
        text_pair=args.text_pair, null_score_diff_threshold=args.null_score_diff_threshold,
    )
    print(f"Exported the {task} of {args.model_dir} to {export_dir}")


if __name__ == "__main__":
    main()
