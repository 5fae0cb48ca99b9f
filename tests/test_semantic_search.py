"""`semantic_search` answers as sentence-transformers' `util.semantic_search` (the same corpus ids in the same
order, the same cosine scores), whatever its chunk sizes, in memory bounded by the chunks rather than the corpus."""

import tracemalloc

import numpy as np
import pytest

from keras_bert_impl import semantic_search
from keras_bert_impl.utils.errors import UserInputError


def _random(rows, dim=32, seed=0):
    return np.random.RandomState(seed).normal(size=(rows, dim)).astype("float32")


@pytest.mark.parametrize("query_chunk_size, corpus_chunk_size", [(100, 100_000), (7, 50), (1, 1)])
def test_results_equal_sentence_transformers_util_semantic_search(query_chunk_size, corpus_chunk_size):
    import torch
    from sentence_transformers import util

    queries, corpus = _random(23, seed=1), _random(400, seed=2)
    expected = util.semantic_search(torch.from_numpy(queries), torch.from_numpy(corpus), top_k=10)
    results = semantic_search(queries, corpus, top_k=10, query_chunk_size=query_chunk_size,
                              corpus_chunk_size=corpus_chunk_size)
    assert len(results) == len(expected) == 23
    for got, want in zip(results, expected):
        assert [hit["corpus_id"] for hit in got] == [hit["corpus_id"] for hit in want]
        np.testing.assert_allclose([hit["score"] for hit in got], [hit["score"] for hit in want], atol=1e-6)
        assert all(isinstance(hit["corpus_id"], int) and isinstance(hit["score"], float) for hit in got)


def test_one_query_and_a_corpus_smaller_than_top_k():
    corpus = _random(3, seed=3)
    results = semantic_search(corpus[1], corpus, top_k=5)
    assert [hit["corpus_id"] for hit in results[0]][0] == 1 and len(results[0]) == 3
    assert results[0][0]["score"] == pytest.approx(1.0, abs=1e-6)


def test_memory_beyond_the_inputs_is_bounded_by_the_chunks_not_the_corpus():
    """A 200,000 x 384 corpus (307 MB) searched in chunks of 10,000 by 100 queries takes under 50 MB more."""
    corpus, queries = _random(200_000, dim=384, seed=4), _random(100, dim=384, seed=5)
    tracemalloc.start()
    try:
        results = semantic_search(queries, corpus, top_k=5, query_chunk_size=50, corpus_chunk_size=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50e6, peak
    # Every query's best hit is the corpus row most similar to it.
    normalized = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    assert [r[0]["corpus_id"] for r in results[:5]] == np.argmax(queries[:5] @ normalized.T, axis=1).tolist()


@pytest.mark.parametrize("arguments, message", [
    ((_random(2, 8), _random(5, 4)), "must be [n, dim] of one dim"),
    ((_random(2, 8), _random(5, 8), 0), "top_k must be a positive integer, got 0"),
])
def test_mistakes_are_one_line_errors(arguments, message):
    with pytest.raises(UserInputError) as error:
        semantic_search(*arguments)
    assert message in str(error.value)
