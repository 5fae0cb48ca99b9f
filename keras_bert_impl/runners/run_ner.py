"""The named-entity recognition recipe (the paper's Section 5.3; CoNLL-2003 format and the datasets
ecosystem's records): its flags, and a run of `tasks.ner.NerTask` on the `NerConfig` made from them.
`python recipes/run_ner.py` or `python -m keras_bert_impl.runners.run_ner`; usage, options and outputs:
recipes/run_ner.py.
"""

from keras_bert_impl.data import conll_data
from keras_bert_impl.models.feature_modes import FEATURE_COMBINES, FEATURE_MODES
from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
)
from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT for named-entity recognition (CoNLL-2003 format, records, CLUENER).")
    add_data_file_flags(p)  # CoNLL text too; default: train.txt, dev.txt, test.txt (and others) in --data_dir
    p.add_argument("--dev_file", dest="validation_file", metavar="DEV_FILE", default=None,
                   help="Same as --validation_file.")
    p.add_argument("--labels", default=None, help="File with one label per line (as GermEval's labels.txt), in "
                   "the order of integer tags. Without it: the labels of every split read.")
    p.add_argument("--tokens_column", default="tokens", help="Column of the words in JSON / CSV / parquet files.")
    p.add_argument("--tags_column", default="ner_tags", help="Column of the tags (strings or label ids).")
    p.add_bool_flag("use_crf", False, "Add a linear-chain CRF over the word sequence (a checkpoint with CRF transitions keeps its CRF).")
    p.add_bool_flag("use_document_context", False, "Fill each window with the surrounding document context.")
    p.add_argument("--tagging_scheme", default="auto", choices=conll_data.TAGGING_SCHEMES,
                   help="Tagging scheme of the files: auto (detected from the training file's tags), iob1, bio, bioes "
                   "(IOBES) or bmes (BMES, BMEO).")
    p.add_bool_flag("feature_based", False, "Frozen BERT features + BiLSTM tagger (the paper's Table 7).")
    # The feature-based tagger's settings default to the saved tagger's when --init_checkpoint holds one.
    p.add_argument("--feature_layers", default=None,
                   help="Hidden states concatenated (feature-based; default -1,-2,-3,-4).")
    p.add_argument("--feature_combine", default=None, choices=FEATURE_COMBINES,
                   help="Feature-based: concatenate --feature_layers (default), or a learned softmax-weighted sum "
                        "(scalar_mix).")
    p.add_argument("--feature_mode", default="", choices=["", *FEATURE_MODES],
                   help="Feature-based: a Table 7 row, replacing --feature_layers and --feature_combine.")
    p.add_argument("--lstm_units", type=int, default=None, help="Units per LSTM direction (feature-based; default 768).")
    p.add_argument("--lstm_layers", type=int, default=None, help="Stacked BiLSTM layers (feature-based; default 2).")
    p.add_argument("--classifier_dropout", type=float, default=0.1)
    return add_task_flags(p, "window", bilstm=True)


# run(args): the task (imported when it runs) on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.ner.NerTask")


if __name__ == "__main__":
    main()
