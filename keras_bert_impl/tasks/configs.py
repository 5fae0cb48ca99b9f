"""The typed settings of the fine-tuning recipes, declared once: `FinetuningConfig` (what every run shares)
and one subclass per task family (`GlueConfig`, `NerConfig`, `SquadConfig`, `SwagConfig`,
`SentenceEmbeddingsConfig`).

Each field is a setting (`utils.settings.setting`): its name and default are those of the recipe's flag
(google-research/bert's names), its kind checks a value given from Python and parses the flag's text, its
help is the flag's `--help` text. The recipes make their flags from these fields
(`runners.flags.settings_parser`) and the config from the parsed flags (`runners.flags.config_from_flags`);
from Python a config is made directly, e.g. `GlueConfig(task_name="sst2", output_dir=...)`. A module without
Keras, so that a recipe's `--help` answers without importing it.
"""

import dataclasses
from typing import ClassVar, Optional

from keras_bert_impl.data import conll_data, glue_data, sentence_pairs_data
from keras_bert_impl.data.dataset_files import STREAMING_MIN_BYTES
from keras_bert_impl.data.text_classification_data import LONG_INPUT_MODES
from keras_bert_impl.metrics.squad_metrics import EVAL_METRICS
from keras_bert_impl.feature_modes import FEATURE_COMBINES, FEATURE_MODES
from keras_bert_impl.training.strategy_names import mixed_precision_setting, strategy_setting, tpu_setting
from keras_bert_impl.utils.settings import (
    BOOLEAN,
    FRACTION,
    INTEGER,
    LEARNING_RATE_GRID,
    NON_NEGATIVE_INT,
    NUMBER,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    check_settings,
    one_of,
    optional,
    setting,
)


# What run_squad.py's files may be besides SQuAD JSON.
_SQUAD_FORMATS = " (or datasets' flattened records: JSON lines, JSON, CSV, parquet)."


def max_seq_length_setting(default):
    """The `max_seq_length` field (`--max_seq_length`) with `default` (SQuAD's is 384)."""
    return setting(default, POSITIVE_INT, "Sequence length after WordPiece.")


def split_file_setting(split, aliases=()):
    """A `--train_file` / `--validation_file` / `--test_file` field (`split`: training, dev or test): the split
    in a datasets-ecosystem file (`data.dataset_files`) instead of `--data_dir`'s original file (`aliases`: more
    flag names, as `utils.settings.setting`'s). The test file does not shape the trained weights."""
    return setting(None, help=f"The {split} set as a JSON lines, JSON, CSV, TSV or parquet file (as Hugging Face "
                   "datasets exports it), instead of --data_dir's original file.", aliases=aliases,
                   shapes_weights=split != "test")


def bilstm_units_setting():
    """The `bilstm_units` field of the token-level recipes (NER, SQuAD): the paper's "+ BiLSTM" (Table 5)."""
    return setting(None, optional(POSITIVE_INT), "Units per direction of a randomly initialized BiLSTM between "
                   "BERT's sequence output and the output layer (the paper's '+ BiLSTM', Table 5). Default: none (the "
                   "original head); a checkpoint written with one keeps its own.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class FinetuningConfig:
    """The settings every fine-tuning run shares, one field per flag of the fine-tuning recipes (same name,
    same default; `--help` says what each does). Fields are keyword-only; `output_dir` is required.

    Made once: the runner replaces fields with `dataclasses.replace` (a new config), never in place. A
    value of the wrong type or range (its kind, `utils.settings`) raises `UserInputError` naming the field.

    Class attributes:
        batch_unit: what a batch holds, in the help texts (example, window, feature).
        flags_last: the flags `--help` lists after a task's own ones, in this order (the original recipes'
            layout).

    Examples:

    >>> config = FinetuningConfig(output_dir="/tmp/run", do_train=True, learning_rate=1e-4)
    >>> config.train_batch_size, config.num_train_epochs, config.max_seq_length
    (32, 3.0, 128)
    >>> FinetuningConfig(output_dir="/tmp/run", train_batch_size=0)
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: FinetuningConfig.train_batch_size: expected a positive integer, got 0
    """

    batch_unit: ClassVar[str] = "example"
    flags_last: ClassVar[tuple] = ("bilstm_units", "dynamic_padding", "pad_to_multiple_of", "save_model", "verbose")

    # The model's files.
    data_dir: Optional[str] = setting(None, help="Directory of the task's data files.")
    init_checkpoint: Optional[str] = setting(None, help="Checkpoint to start from: a Hugging Face directory, a "
                                             "Google checkpoint directory or prefix, or a directory written by "
                                             "save_pretrained. Without it the model starts from random weights.")
    ignore_stored_head: bool = setting(False, BOOLEAN, "Start a new task head on --init_checkpoint's backbone, also "
                                       "when it holds another task's model (refused otherwise) or other labels.")
    bert_config_file: Optional[str] = setting(None, help="bert_config.json; default: the checkpoint's own.")
    vocab_file: Optional[str] = setting(None, help="vocab.txt; default: the checkpoint directory's vocab.txt.")
    do_lower_case: Optional[bool] = setting(None, optional(BOOLEAN),
                                            "Lower-case the input (uncased models). Default: the checkpoint's.")
    nfkc: Optional[bool] = setting(None, optional(BOOLEAN), "Replace every character by its NFKC form before "
                                   "tokenizing (full-width letters, digits and punctuation as ASCII; not the "
                                   "original's), saved with the model. Default: the checkpoint's "
                                   "tokenizer_config.json, else off.")
    output_dir: str = setting(help="Where checkpoints, logs, metrics and predictions go; a run interrupted there "
                              "resumes from its last epoch when started again.", shapes_weights=False)
    overwrite_output_dir: bool = setting(False, BOOLEAN, "Start afresh: remove what an earlier run wrote in "
                                         "--output_dir (checkpoints, logs, model/, results, predictions) instead of "
                                         "resuming it; other files stay.", shapes_weights=False)
    max_seq_length: int = max_seq_length_setting(128)
    # What the run does.
    do_train: bool = setting(False, BOOLEAN, "Fine-tune on the training set.", shapes_weights=False)
    do_eval: bool = setting(False, BOOLEAN, "Evaluate on the dev set.", shapes_weights=False)
    do_predict: bool = setting(False, BOOLEAN, "Predict on the test set.", shapes_weights=False)
    # Training.
    train_batch_size: int = setting(32, POSITIVE_INT, "Examples per training batch.")  # the global batch
    eval_batch_size: int = setting(8, POSITIVE_INT, "Examples per evaluation batch.", shapes_weights=False)
    predict_batch_size: int = setting(8, POSITIVE_INT, "Examples per prediction batch.", shapes_weights=False)
    learning_rate: float = setting(5e-5, POSITIVE_NUMBER, "Peak learning rate of AdamW.")
    num_train_epochs: float = setting(3.0, POSITIVE_NUMBER, "Training epochs (a fraction counts as a whole epoch).")
    warmup_proportion: float = setting(0.1, FRACTION, "Fraction of steps of linear warmup.")
    seed: int = setting(42, NON_NEGATIVE_INT, "Seed of initialization and shuffling.")
    steps_per_execution: int = setting(1, POSITIVE_INT, "Train steps per compiled call.", shapes_weights=False)
    log_every_steps: int = setting(100, NON_NEGATIVE_INT, "Optimizer steps between two records of "
                                   "output_dir/train_steps_log.jsonl (0: none).", shapes_weights=False)
    keep_checkpoint_max: int = setting(1, POSITIVE_INT, "Epoch checkpoints (with optimizer state) kept in "
                                       "output_dir/checkpoints for resuming: the newest ones (best.weights.h5 keeps "
                                       "the best epoch's weights).", shapes_weights=False)
    gradient_accumulation_steps: int = setting(1, POSITIVE_INT, "Split each --train_batch_size batch into this many "
                                               "batches whose gradients are summed before one update (less memory, the "
                                               "same updates); steps count updates.")
    lora_rank: Optional[int] = setting(None, optional(POSITIVE_INT), "Fine-tune LoRA adapters of this rank on the "
                                       "attention's query and value projections (the backbone frozen; output_dir/model "
                                       "gets the merged weights, output_dir/adapters.lora.h5 the adapters); default: "
                                       "full fine-tuning.")
    # The paper's protocol (`runners.protocol`): a learning-rate grid times restarts.
    learning_rate_grid: Optional[tuple] = setting(None, optional(LEARNING_RATE_GRID), "Comma-separated learning rates, "
                                                  "e.g. 5e-5,4e-5,3e-5,2e-5 (the paper's): one run each (replacing "
                                                  "--learning_rate) in output_dir/runs/, the best on dev selected "
                                                  "(output_dir/protocol_results.json).")
    num_restarts: int = setting(1, POSITIVE_INT, "Runs per learning rate, restart k with seed --seed + 1000*k (other "
                                "classifier initialization and shuffling), the best on dev selected.")
    # Distribution and mixed precision (`training.distribute`).
    strategy: str = strategy_setting()
    tpu: Optional[str] = tpu_setting()
    mixed_precision: str = mixed_precision_setting()
    # Batches, the saved model, fit's verbosity.
    dynamic_padding: bool = setting(True, BOOLEAN, lambda config_class: f"Pad each batch to its longest "
                                    f"{config_class.batch_unit}, bucketing by length.")
    pad_to_multiple_of: int = setting(8, POSITIVE_INT, "Round dynamic lengths up to a multiple.")
    save_model: bool = setting(True, BOOLEAN, "Write the fine-tuned model with its vocab.txt and tokenizer_config.json "
                               "to output_dir/model (Hugging Face layout).", shapes_weights=False)
    verbose: int = setting(1, one_of((0, 1, 2)), "fit's progress: 1 = a progress bar on a terminal (one line per "
                           "epoch in a file), 2 = one line per epoch, 0 = none.", shapes_weights=False)

    def __post_init__(self):
        check_settings(self)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GlueConfig(FinetuningConfig):
    """The settings of a run of run_glue.py: `FinetuningConfig`'s and run_glue.py's own flags (same names,
    same defaults); `output_dir` is required.

    Examples:

    >>> config = GlueConfig(task_name="sst2", data_dir="data/sentiment", output_dir="/tmp/sst2", do_train=True)
    >>> config.classifier_dropout, config.label_column, config.max_seq_length, config.long_input
    (0.1, 'label', 128, 'truncate')
    """

    # Any spelling `glue_data.canonical_task` reads; None: your own data, its labels read from the files.
    task_name: Optional[str] = setting(None, help=f"One of {', '.join(glue_data.GLUE_TASKS)}. Without it: your own "
                                       "data in --train_file / --validation_file / --test_file, labels of any count "
                                       "(integers or strings; floats: a regression) read from --train_file.")
    classifier_dropout: float = setting(0.1, NUMBER)
    # A split's file of the datasets ecosystem instead of --data_dir's, and its columns.
    train_file: Optional[str] = split_file_setting("training")
    validation_file: Optional[str] = split_file_setting("dev")
    test_file: Optional[str] = split_file_setting("test")
    text_column: Optional[str] = setting(None, help="Column of the first text in --*_file records; default: the "
                                         "task's glue datasets column (sentence, sentence1, question1, premise or "
                                         "question); your own data: sentence1 (with sentence2), else text or sentence.")
    text_pair_column: Optional[str] = setting(None, help="Column of the second text ('' for none); default: the "
                                              "task's (sentence2, question2, hypothesis, sentence; none for cola and "
                                              "sst2).")
    label_column: str = setting("label", help="Column of the label in --*_file records.")
    long_input: str = setting("truncate", one_of(LONG_INPUT_MODES), "A text longer than --max_seq_length: truncate "
                              "it (the original), or classify its windows of --max_seq_length tokens, pooling their "
                              "logits by their mean or max (training on every window).")
    # Your own data: a regression on its labels, integers too (float labels are one without it).
    regression: bool = setting(False, BOOLEAN, "Your own data: a regression on its labels (integers too); without it "
                               "float labels make a regression and other labels a classifier of at least two labels.")
    # Stream the training file (`data.streaming`): None: from `streaming.STREAMING_MIN_BYTES` up.
    stream_train_data: Optional[bool] = setting(None, optional(BOOLEAN), "Stream the training file of a GLUE task (a "
                                                "TSV or JSON lines) from disk every epoch, in bounded memory, instead "
                                                "of featurizing it whole in memory (another batch order). Default: "
                                                f"for files of {STREAMING_MIN_BYTES // 2**20} MiB or more.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NerConfig(FinetuningConfig):
    """The settings of an NER run: `FinetuningConfig`'s and run_ner.py's own flags (same names, same
    defaults), the feature-based tagger's among them (`feature_based` and the `feature_*` / `lstm_*`
    fields, None: the saved tagger's setting, else the paper's)."""

    batch_unit: ClassVar[str] = "window"

    # The files (CoNLL text too; default: train.txt, dev.txt, test.txt and others in --data_dir), the labels.
    train_file: Optional[str] = split_file_setting("training")
    validation_file: Optional[str] = split_file_setting("dev", aliases=(("dev_file", "Same as --validation_file."),))
    test_file: Optional[str] = split_file_setting("test")
    labels: Optional[str] = setting(None, help="File with one label per line (as GermEval's labels.txt), in the order "
                                    "of integer tags. Without it: the labels of every split read.")
    tokens_column: str = setting("tokens", help="Column of the words in JSON / CSV / parquet files.")
    tags_column: str = setting("ner_tags", help="Column of the tags (strings or label ids).")
    # The fine-tuned tagger.
    use_crf: bool = setting(False, BOOLEAN, "Add a linear-chain CRF over the word sequence (a checkpoint with CRF "
                            "transitions keeps its CRF).")
    use_document_context: bool = setting(False, BOOLEAN, "Fill each window with the surrounding document context.")
    tagging_scheme: str = setting("auto", one_of(conll_data.TAGGING_SCHEMES), "Tagging scheme of the files: auto "
                                  "(detected from the training file's tags), iob1, bio, bioes (IOBES) or bmes (BMES, "
                                  "BMEO).")
    # The feature-based tagger (the paper's Table 7); None: the saved tagger's setting, else the paper's.
    feature_based: bool = setting(False, BOOLEAN, "Frozen BERT features + BiLSTM tagger (the paper's Table 7).")
    feature_layers: Optional[str] = setting(None, help="Hidden states concatenated (feature-based; default "
                                            "-1,-2,-3,-4).")
    feature_combine: Optional[str] = setting(None, optional(one_of(FEATURE_COMBINES)), "Feature-based: concatenate "
                                             "--feature_layers (default), or a learned softmax-weighted sum "
                                             "(scalar_mix).")
    feature_mode: str = setting("", one_of(("", *FEATURE_MODES)), "Feature-based: a Table 7 row, replacing "
                                "--feature_layers and --feature_combine.")
    lstm_units: Optional[int] = setting(None, optional(INTEGER), "Units per LSTM direction (feature-based; default "
                                        "768).")
    lstm_layers: Optional[int] = setting(None, optional(INTEGER), "Stacked BiLSTM layers (feature-based; default 2).")
    classifier_dropout: float = setting(0.1, NUMBER)
    bilstm_units: Optional[int] = bilstm_units_setting()


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadConfig(FinetuningConfig):
    """The settings of a SQuAD run: `FinetuningConfig`'s (`max_seq_length` 384, as the original's) and
    run_squad.py's own flags (same names, same defaults)."""

    batch_unit: ClassVar[str] = "feature"

    max_seq_length: int = max_seq_length_setting(384)
    train_file: Optional[str] = setting(None, help="SQuAD JSON for training, e.g. train-v1.1.json" + _SQUAD_FORMATS)
    predict_file: Optional[str] = setting(None, help="SQuAD JSON for predictions, e.g. dev-v1.1.json" + _SQUAD_FORMATS)
    doc_stride: int = setting(128, INTEGER, "Tokens between the starts of document windows.")
    max_query_length: int = setting(64, INTEGER, "Questions are cut to this many tokens.")
    # SQuAD's decoding of answers: it does not shape the trained weights.
    n_best_size: int = setting(20, INTEGER, "Size of the n-best lists.", shapes_weights=False)
    max_answer_length: int = setting(30, INTEGER, "Longest answer, in WordPiece tokens.", shapes_weights=False)
    version_2_with_negative: bool = setting(False, BOOLEAN, "SQuAD v2.0: some questions have no answer.")
    null_score_diff_threshold: float = setting(0.0, NUMBER, "v2.0: predict no answer when score_null - best_non_null "
                                               "> this.", shapes_weights=False)
    eval_metric: str = setting("auto", one_of(EVAL_METRICS), "Evaluation of --predict_file: squad (the official SQuAD "
                               "v1.1 / v2.0 script), cmrc2018 (CMRC 2018's character-level F1 and EM, for Chinese), or "
                               "auto: cmrc2018 when its contexts are mostly CJK ideographs, else squad.")
    verbose_logging: bool = setting(False, BOOLEAN, "Print the data statistics and the misaligned answers' ids.",
                                    shapes_weights=False)
    bilstm_units: Optional[int] = bilstm_units_setting()


@dataclasses.dataclass(frozen=True, kw_only=True)
class SwagConfig(FinetuningConfig):
    """The settings of a SWAG run: `FinetuningConfig`'s and run_swag.py's own flags (same names, same
    defaults): a split's file instead of --data_dir's train.csv / val.csv / test.csv."""

    train_file: Optional[str] = split_file_setting("training")
    validation_file: Optional[str] = split_file_setting("dev")
    test_file: Optional[str] = split_file_setting("test")


# The choices of --pooling (`layers.sentence_pooling.POOLING_MODES`, written here so that --help answers without
# importing Keras; tests/test_run_sentence_embeddings.py checks that they are the same).
POOLING_CHOICES = ("mean", "cls", "max", "mean_sqrt_len_tokens")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceEmbeddingsConfig(FinetuningConfig):
    """The settings of a sentence-embedding run: `FinetuningConfig`'s and run_sentence_embeddings.py's own
    flags (same names, same defaults).

    Examples:

    >>> config = SentenceEmbeddingsConfig(output_dir="/tmp/sentences", loss="cosent", pooling="cls")
    >>> config.loss, config.pooling, config.normalize, config.max_seq_length
    ('cosent', 'cls', None, 128)
    """

    batch_unit: ClassVar[str] = "text group"

    train_file: Optional[str] = split_file_setting("training")
    validation_file: Optional[str] = split_file_setting("dev")
    test_file: Optional[str] = split_file_setting("test")
    loss: str = setting("mnrl", one_of(sentence_pairs_data.LOSSES), "mnrl: in-batch negatives (--train_file columns "
                        "anchor, positive, optional negative); cosent: CoSENT on scored pairs (sentence1, sentence2, "
                        "score); simcse: unsupervised SimCSE (text, each twice through dropout).")
    symmetric: bool = setting(False, BOOLEAN, "--loss=mnrl: also rank the anchors for each positive "
                              "(MultipleNegativesSymmetricRankingLoss).")
    pooling: Optional[str] = setting(None, optional(one_of(POOLING_CHOICES)), "How token vectors become the sentence "
                                     "embedding. Default: the checkpoint's (1_Pooling/config.json of a "
                                     "sentence-transformers directory), else mean.")
    normalize: Optional[bool] = setting(None, optional(BOOLEAN), "L2-normalize the embeddings (a Normalize module). "
                                        "Default: whether the checkpoint has one, else off.")
