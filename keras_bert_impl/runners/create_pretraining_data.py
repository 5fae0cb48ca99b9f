"""Create masked-LM / next-sentence pretraining TFRecords (google-research/bert's script, streamed).

Same flags and same output format as google-research/bert's `create_pretraining_data.py` (TFRecord files of
`tf.train.Example`s, written without TensorFlow: `data/pretraining_records.py`, byte for byte TensorFlow's
writer's); the corpus is read `--shard_size_documents` documents at a time instead of all at once (see
keras_bert_impl/data/pretraining_instances.py for the algorithm and the few documented differences). The
command is `python -m keras_bert_impl.runners.create_pretraining_data` or, in a checkout,
`python recipes/create_pretraining_data.py`:

    python -m keras_bert_impl.runners.create_pretraining_data \
        --input_file=corpus/*.txt --output_file=out/train-0.tfrecord,out/train-1.tfrecord \
        --vocab_file=vocab.txt --do_lower_case=True --max_seq_length=128 \
        --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=10

Boolean flags take absl's forms: `--do_lower_case`, `--do_lower_case=False`, `--nodo_lower_case`.
Extra flags: `--sentence_order` (ALBERT sentence-order labels in `next_sentence_labels`),
`--shard_size_documents` (memory bound), `--dynamic_masking` (write unmasked pairs for
`tf_pretraining_datasets.unmasked_pretraining_dataset`, which masks on the fly). WikiExtractor's `<doc ...>` and
`</doc>` lines are dropped (each ends a document); the summary says how many.
"""

import dataclasses
import os
import random
import sys
import time
from typing import Optional

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.settings import BOOLEAN, INTEGER, NUMBER, one_of, optional, setting


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainingDataConfig:
    """The settings of the script, one per flag, with the original's flag names and defaults."""

    input_file: str = setting(help="Input raw text file(s): comma-separated list of files or globs.")
    output_file: str = setting(help="Output TFRecord file(s), comma-separated; instances go round-robin.")
    vocab_file: str = setting(help="The vocabulary file that the BERT model was trained on.")
    do_lower_case: bool = setting(True, BOOLEAN, "Lower case the input (True for uncased models, False for cased).")
    do_whole_word_mask: bool = setting(False, BOOLEAN, "Mask whole words rather than single WordPieces.")
    word_segmenter: Optional[str] = setting(None, optional(one_of(("jieba",))), "With --do_whole_word_mask: the words "
                                            "of Chinese text from this segmenter (all characters of a word masked "
                                            "together, as HFL's Chinese-BERT-wwm); needs the jieba package. Default: "
                                            "none (words are WordPieces and their ## pieces, the original's rule).")
    max_seq_length: int = setting(128, INTEGER, "Maximum sequence length.")
    max_predictions_per_seq: int = setting(20, INTEGER, "Maximum masked-LM predictions per sequence.")
    random_seed: int = setting(12345, INTEGER, "Random seed for data generation.")
    dupe_factor: int = setting(10, INTEGER, "Number of times to duplicate the input data (with different masks).")
    masked_lm_prob: float = setting(0.15, NUMBER, "Masked LM probability.")
    mask_token_prob: float = setting(0.8, NUMBER, "Of the chosen tokens, the share replaced by [MASK] (paper Table "
                                     "8's MASK; 0.8).")
    keep_token_prob: float = setting(0.1, NUMBER, "Of the chosen tokens, the share kept unchanged (SAME; 0.1).")
    random_token_prob: float = setting(0.1, NUMBER, "Of the chosen tokens, the share replaced by a random vocabulary "
                                       "token (RND; 0.1). The three sum to 1; with --dynamic_masking they are not "
                                       "used (the reader masks).")
    short_seq_prob: float = setting(0.1, NUMBER, "Probability of sequences shorter than the maximum length.")
    sentence_order: bool = setting(False, BOOLEAN, "ALBERT sentence-order prediction pairs (label 1 = swapped) "
                                   "instead of NSP.")
    shard_size_documents: int = setting(1000, INTEGER, "Documents read, paired and shuffled at a time: the memory "
                                        "bound (about shard_size_documents x dupe_factor x instances per document "
                                        "are held for the shuffle; 0 = the whole corpus, as the original). The random "
                                        "next-sentence document is drawn within the shard.")
    dynamic_masking: bool = setting(False, BOOLEAN, "Write unmasked pairs (with word_starts) for on-the-fly masking.")
    progress_every: int = setting(10000, INTEGER, "Instances between two progress lines.")


def build_parser():
    """The argument parser: a flag per field of `PretrainingDataConfig`."""
    return settings_parser(PretrainingDataConfig, __doc__.split("\n")[0])


def _glob_inputs(input_file):
    files = []
    for pattern in input_file.split(","):
        if pattern:
            matched = file_io.glob(pattern)
            if not matched:
                raise UserInputError(f"--input_file: nothing matches {pattern!r}")
            files.extend(matched)
    return files


def main(argv=None, tokenizer=None):
    """Runs the script; `tokenizer` replaces the one built from `--vocab_file` (tests). A user's mistake (a
    vocabulary without [MASK], a corpus without text) exits with status 2 and a one-line message."""
    return run_main(build_parser, lambda args: run(args, tokenizer), argv, uses_keras=False)


def run(args, tokenizer=None):
    """Writes the TFRecords of the parsed flags; returns the number of instances written."""
    return create_pretraining_data(config_from_flags(PretrainingDataConfig, args), tokenizer)


def create_pretraining_data(config, tokenizer=None):
    """Writes the TFRecords `config` (a `PretrainingDataConfig`) asks for (without TensorFlow:
    `data/pretraining_records.py`); returns the number of instances written."""
    from keras_bert_impl.data import pretraining_documents, pretraining_instances, pretraining_records
    from keras_bert_impl.data.masked_lm_predictions import check_masking_split

    check_masking_split(config.mask_token_prob, config.keep_token_prob, config.random_token_prob)
    if tokenizer is None:
        from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

        tokenizer = BertTokenizer(config.vocab_file, do_lower_case=config.do_lower_case)
    if "[MASK]" not in tokenizer.vocab:
        raise UserInputError(f"{getattr(tokenizer, 'vocab_file', config.vocab_file)}: no [MASK] token; pretraining "
                             "data masks tokens with it (else they would be written as [UNK]).")

    input_files = _glob_inputs(config.input_file)
    output_files = [f for f in config.output_file.split(",") if f]
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    log("*** Reading from input files ***")
    for f in input_files:
        log(f"  {f}")
    log("*** Writing to output files ***")
    for f in output_files:
        log(f"  {f}")
        parent = os.path.dirname(f)
        if parent:
            file_io.makedirs(parent)

    segmenter = None
    if config.word_segmenter:
        if not config.do_whole_word_mask:
            raise UserInputError("--word_segmenter groups the characters of whole words for --do_whole_word_mask; "
                                 "pass --do_whole_word_mask too.")
        from keras_bert_impl.data.word_segmentation import get_segmenter

        segmenter = get_segmenter(config.word_segmenter)
    stats = {}
    documents = pretraining_documents.read_documents(
        input_files, tokenizer, stats=stats, word_segmenter=segmenter)
    instances = pretraining_instances.create_training_instances(
        documents, list(tokenizer.vocab.keys()), random.Random(config.random_seed),
        max_seq_length=config.max_seq_length, dupe_factor=config.dupe_factor, short_seq_prob=config.short_seq_prob,
        masked_lm_prob=config.masked_lm_prob, max_predictions_per_seq=config.max_predictions_per_seq,
        do_whole_word_mask=config.do_whole_word_mask, sentence_order=config.sentence_order,
        shard_size_documents=config.shard_size_documents or None, do_masking=not config.dynamic_masking, stats=stats,
        mask_token_prob=config.mask_token_prob, keep_token_prob=config.keep_token_prob,
        random_token_prob=config.random_token_prob,
    )
    start = time.time()

    def progress(written):
        log(
            f"documents read: {stats.get('documents_read', 0)}, instances written: {written} "
            f"({time.time() - start:.1f} s)"
        )

    total = pretraining_records.write_instances_to_example_files(
        instances,
        tokenizer,
        output_files,
        config.max_seq_length,
        config.max_predictions_per_seq,
        with_masks=not config.dynamic_masking,
        progress_fn=progress,
        progress_every=config.progress_every,
        source=f"--input_file {config.input_file}",
    )
    log(f"Wrote {total} total instances from {stats.get('documents_read', 0)} documents; dropped "
        f"{stats.get('markup_lines_dropped', 0)} WikiExtractor <doc ...>/</doc> lines")
    return total


if __name__ == "__main__":
    main()
