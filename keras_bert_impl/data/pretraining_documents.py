"""The corpus of BERT pretraining data: text files read as tokenized documents, streamed, and grouped into
shards of documents.

Input format (as google-research/bert's `create_pretraining_data.py`): plain text files, one sentence per
line, a blank line between documents. Sentences are the units that the "A"/"B" segments are built from
(`data/pretraining_instances.py`). The article markup lines of WikiExtractor's output
(`<doc id=... url=... title=...>`, `</doc>`) are dropped and end the current document, as a blank line does
(the original would have tokenized them as sentences).

Differences from the original, deliberate:

* **Streaming.** The original reads the whole corpus into memory before creating a single instance
  (google-research/bert issues #612, #616). `read_documents` yields one document at a time and
  `iter_document_shards` groups them into shards of `shard_size_documents`, of which
  `pretraining_instances.create_training_instances` holds one at a time.
* **End of file ends a document.** The original keeps appending to the last document across input
  files when a file does not end with a blank line; here each file's end closes its last document.
"""

from typing import Callable, Iterable, Iterator, List, Optional

from keras_bert_impl.data.word_segmentation import mark_whole_words
from keras_bert_impl.utils.file_io import open_text

# A document is a list of sentences; a sentence is a list of WordPiece tokens.
Document = List[List[str]]


def is_wikiextractor_markup(line: str) -> bool:
    """Whether a stripped line is WikiExtractor's article markup: `<doc id=... url=... title=...>` or `</doc>`.

    Examples:

    >>> is_wikiextractor_markup('<doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">')
    True
    >>> is_wikiextractor_markup("</doc>"), is_wikiextractor_markup("<document> is a word.")
    (True, False)
    """
    return line == "</doc>" or (line.startswith("<doc ") and line.endswith(">"))


def read_documents(input_files: Iterable[str], tokenizer, open_fn: Optional[Callable] = None,
                   stats: Optional[dict] = None, word_segmenter: Optional[Callable] = None) -> Iterator[Document]:
    """Yields the tokenized documents of text files, one at a time (never the whole corpus).

    As the original: each line is stripped; a blank line ends the current document; a line whose
    tokenization is empty is dropped; empty documents are dropped. Unlike the original, the end of a
    file also ends its last document, and WikiExtractor's `<doc ...>` / `</doc>` lines
    (`is_wikiextractor_markup`) are dropped and end the current document.

    Args:
        input_files: Paths of text files, read in this order.
        tokenizer: Anything with `tokenize(text) -> list[str]` (e.g. `keras_bert_impl.tokenizers.bert_tokenizer.BertTokenizer`).
        open_fn: `open_fn(path)` returning a text file object; defaults to `file_io.open_text(path)` (UTF-8).
            Pass `tf.io.gfile.GFile` to read from GCS and other TensorFlow file systems.
        stats: Optional dict whose `markup_lines_dropped` counts the WikiExtractor lines dropped.
        word_segmenter: None, or `text -> [(word, start, end)]` (`word_segmentation.get_segmenter`): the
            characters after the first of a segmenter's Chinese word are marked as continuing it, for
            whole-word masking (`word_segmentation.mark_whole_words`; `tokenizer` needs `tokenize_with_offsets`).

    Yields:
        Documents: lists of sentences, each a non-empty list of tokens.

    Examples:

    >>> class Ws:
    ...     def tokenize(self, text):
    ...         return text.split()
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(path, "w").write("a b\\nc\\n\\nd e\\n")
    >>> list(read_documents([path], Ws()))
    [[['a', 'b'], ['c']], [['d', 'e']]]
    >>> _ = open(path, "w").write('<doc id="1" url="u" title="T">\\nT\\n\\na b\\n</doc>\\n<doc id="2" url="v" title="U">\\nc\\n')
    >>> stats = {}
    >>> list(read_documents([path], Ws(), stats=stats)), stats
    ([[['T']], [['a', 'b']], [['c']]], {'markup_lines_dropped': 3})
    """
    if stats is None:
        stats = {}
    stats.setdefault("markup_lines_dropped", 0)
    if open_fn is None:

        def open_fn(path):
            return open_text(path)

    for input_file in input_files:
        document: Document = []
        with open_fn(input_file) as reader:
            for line in reader:
                if isinstance(line, bytes):
                    line = line.decode("utf-8")
                line = line.strip()
                # Empty lines are document delimiters (original); so is WikiExtractor's markup, dropped.
                markup = is_wikiextractor_markup(line)
                stats["markup_lines_dropped"] += markup
                if not line or markup:
                    if document:
                        yield document
                    document = []
                    continue
                if word_segmenter is None:
                    tokens = tokenizer.tokenize(line)
                else:
                    tokens = mark_whole_words(line, tokenizer, word_segmenter)
                if tokens:
                    document.append(tokens)
        if document:
            yield document


def iter_document_shards(
    documents: Iterable[Document], shard_size_documents: Optional[int]
) -> Iterator[List[Document]]:
    """Groups a stream of documents into lists of at most `shard_size_documents` documents.

    Only one shard is held at a time: the next document is pulled from `documents` only after the
    consumer asked for the next shard.

    Args:
        documents: An iterable of documents (e.g. `read_documents(...)`).
        shard_size_documents: Maximum documents per shard; `None` or 0 means one shard with everything
            (the original's in-memory behaviour).

    Yields:
        Lists of documents.

    Examples:

    >>> [len(s) for s in iter_document_shards([[["a"]]] * 5, 2)]
    [2, 2, 1]
    """
    if shard_size_documents is not None and shard_size_documents < 0:
        raise ValueError(f"shard_size_documents must be >= 0 or None, got {shard_size_documents}")
    shard: List[Document] = []
    for document in documents:
        shard.append(document)
        if shard_size_documents and len(shard) >= shard_size_documents:
            yield shard
            shard = []
    if shard:
        yield shard
