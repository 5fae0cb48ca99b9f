"""Extracts fixed BERT features (the feature-based approach), as google-research/bert's extract_features.py.

    python recipes/extract_features.py --input_file=input.txt --output_file=output.jsonl \
        --init_checkpoint=PATH --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

Every line of --input_file is `text_a` or `text_a ||| text_b`; --output_file gets one JSON object per
line in the original's structure (see keras_bert_impl/tasks/feature_extraction.py). --init_checkpoint is a
Hugging Face directory, a Google checkpoint (directory or prefix) or a directory written by
save_pretrained; --vocab_file and --bert_config_file default to the checkpoint's own.
"""

from keras_bert_impl.tasks.feature_extraction import extract_features, write_features
from keras_bert_impl.runners.finetuning import load_backbone, load_tokenizer
from keras_bert_impl.runners.flags import FlagParser


def build_parser():
    p = FlagParser(description=__doc__)
    p.add_argument("--input_file", required=True, help="Text lines: `text_a` or `text_a ||| text_b`.")
    p.add_argument("--output_file", required=True, help="Where the JSON Lines go.")
    p.add_argument("--layers", default="-1,-2,-3,-4", help="Comma-separated encoder layer indices.")
    p.add_argument("--bert_config_file", default=None, help="bert_config.json; default: the checkpoint's own.")
    p.add_argument("--max_seq_length", type=int, default=128, help="Sequence length after WordPiece.")
    p.add_argument("--init_checkpoint", required=True, help="The pretrained checkpoint.")
    p.add_argument("--vocab_file", default=None, help="vocab.txt; default: the checkpoint directory's.")
    p.add_bool_flag("do_lower_case", True, "Lower-case the input (uncased models).")
    p.add_argument("--batch_size", type=int, default=32, help="Lines per forward pass.")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    layer_indexes = [int(x) for x in args.layers.split(",")]
    tokenizer = load_tokenizer(args)
    backbone = load_backbone(args, output_hidden_states=True)
    with open(args.input_file, encoding="utf-8") as f:
        lines = f.readlines()
    records = extract_features(backbone, tokenizer, lines, layer_indexes, args.max_seq_length, args.batch_size)
    count = write_features(args.output_file, records)
    print(f"wrote features of {count} lines to {args.output_file}")


if __name__ == "__main__":
    main()
