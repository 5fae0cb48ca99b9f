"""The linear-chain CRF against brute-force enumeration of all K**T tag sequences (numpy)."""

import itertools

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.crf import (
    CRF,
    crf_log_likelihood,
    crf_log_norm,
    crf_sequence_score,
    crf_viterbi_decode,
)
from tests.backend_utils import to_numpy, trainable_gradients

NUM_TAGS = 3
MAX_LEN = 4
# Lengths cover full, partial, single-token and empty sequences (three of each per batch).
LENGTHS = np.tile([4, 3, 2, 1, 0, 4, 2], 3)


# ----------------------------------------------------------------------------------------------
# numpy brute force
# ----------------------------------------------------------------------------------------------


def _np_score(unary, tags, transitions, start, end):
    """s(y) for one unpadded sequence: unary [L, K], tags [L]."""
    length = len(tags)
    if length == 0:
        return 0.0
    score = sum(unary[t, tags[t]] for t in range(length))
    score += sum(transitions[tags[t - 1], tags[t]] for t in range(1, length))
    if start is not None:
        score += start[tags[0]]
    if end is not None:
        score += end[tags[-1]]
    return float(score)


def _enumerate(unary, transitions, start, end):
    """All (sequence, score) pairs for one unpadded sequence."""
    length, num_tags = unary.shape
    sequences = list(itertools.product(range(num_tags), repeat=length))
    scores = np.array([_np_score(unary, seq, transitions, start, end) for seq in sequences])
    return sequences, scores


def _logsumexp(x):
    top = np.max(x)
    return float(top + np.log(np.sum(np.exp(x - top))))


def brute_force(potentials, tags, lengths, transitions, start=None, end=None):
    """Per example: score of `tags`, log Z, best sequence (padded with 0), best score, marginals."""
    out = {"score": [], "log_norm": [], "best_tags": [], "best_score": [], "expected_transitions": [], "marginals": []}
    for b, length in enumerate(lengths):
        unary = potentials[b, :length]
        sequences, scores = _enumerate(unary, transitions, start, end)
        log_norm = _logsumexp(scores) if length else 0.0
        best = int(np.argmax(scores))
        probs = np.exp(scores - log_norm)
        expected = np.zeros_like(transitions)
        marginals = np.zeros(potentials.shape[1:])
        for seq, p in zip(sequences, probs):
            for t in range(1, length):
                expected[seq[t - 1], seq[t]] += p
            for t in range(length):
                marginals[t, seq[t]] += p
        padded = np.zeros(potentials.shape[1], "int32")
        padded[:length] = sequences[best]
        out["score"].append(_np_score(unary, tags[b, :length], transitions, start, end))
        out["log_norm"].append(log_norm)
        out["best_tags"].append(padded)
        out["best_score"].append(float(scores[best]) if length else 0.0)
        out["expected_transitions"].append(expected)
        out["marginals"].append(marginals)
    return {k: np.array(v) for k, v in out.items()}


def _random_case(seed, batch=len(LENGTHS), max_len=MAX_LEN, num_tags=NUM_TAGS, lengths=LENGTHS):
    rng = np.random.RandomState(seed)
    potentials = rng.normal(size=(batch, max_len, num_tags)).astype("float32")
    tags = rng.randint(0, num_tags, size=(batch, max_len)).astype("int32")
    mask = (np.arange(max_len)[None, :] < np.asarray(lengths)[:, None]).astype("float32")
    transitions = rng.normal(size=(num_tags, num_tags)).astype("float32")
    start = rng.normal(size=num_tags).astype("float32")
    end = rng.normal(size=num_tags).astype("float32")
    return potentials, tags, mask, transitions, start, end


# ----------------------------------------------------------------------------------------------
# functions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_boundary", [False, True])
def test_log_likelihood_equals_brute_force_enumeration(use_boundary):
    seed = 0
    potentials, tags, mask, transitions, start, end = _random_case(seed)
    if not use_boundary:
        start = end = None
    expected = brute_force(potentials, tags, LENGTHS, transitions, start, end)

    score = to_numpy(crf_sequence_score(potentials, tags, transitions, mask, start, end))
    log_norm = to_numpy(crf_log_norm(potentials, transitions, mask, start, end))
    log_likelihood = to_numpy(crf_log_likelihood(potentials, tags, transitions, mask, start, end))

    np.testing.assert_allclose(score, expected["score"], atol=1e-5)
    np.testing.assert_allclose(log_norm, expected["log_norm"], atol=1e-5)
    np.testing.assert_allclose(log_likelihood, expected["score"] - expected["log_norm"], atol=1e-5)
    # Empty sequence: log p(empty) = 0; every other likelihood is a proper log-probability.
    assert log_likelihood[LENGTHS == 0] == pytest.approx(0.0, abs=1e-6)
    assert np.all(log_likelihood[LENGTHS > 0] < 0)


@pytest.mark.parametrize("use_boundary", [False, True])
def test_viterbi_equals_brute_force_argmax(use_boundary):
    seed = 1
    potentials, _, mask, transitions, start, end = _random_case(seed + 10)
    if not use_boundary:
        start = end = None
    expected = brute_force(potentials, np.zeros((len(LENGTHS), MAX_LEN), "int32"), LENGTHS, transitions, start, end)

    tags, best_score = crf_viterbi_decode(potentials, transitions, mask, start, end)
    tags = to_numpy(tags)
    assert tags.dtype == np.int32
    np.testing.assert_array_equal(tags, expected["best_tags"])
    np.testing.assert_allclose(to_numpy(best_score), expected["best_score"], atol=1e-5)
    # Padding positions are tag 0, and the score of the decoded sequence is the best score.
    assert np.all(tags[mask == 0] == 0)
    np.testing.assert_allclose(
        to_numpy(crf_sequence_score(potentials, tags, transitions, mask, start, end)), expected["best_score"], atol=1e-5
    )


def test_single_time_step_and_all_positions_real():
    potentials, tags, _, transitions, start, end = _random_case(5, batch=3, max_len=1, lengths=[1, 1, 0])
    lengths = np.array([1, 1, 1])
    expected = brute_force(potentials, tags, lengths, transitions, start, end)
    # mask=None means every position is real.
    ll = to_numpy(crf_log_likelihood(potentials, tags, transitions, None, start, end))
    np.testing.assert_allclose(ll, expected["score"] - expected["log_norm"], atol=1e-5)
    decoded, best = crf_viterbi_decode(potentials, transitions, None, start, end)
    np.testing.assert_array_equal(to_numpy(decoded), expected["best_tags"])
    np.testing.assert_allclose(to_numpy(best), expected["best_score"], atol=1e-5)
    # A length-0 sequence with T == 1.
    mask = np.array([[1], [0], [1]], "float32")
    ll = to_numpy(crf_log_likelihood(potentials, tags, transitions, mask, start, end))
    assert ll[1] == pytest.approx(0.0, abs=1e-6)
    decoded, best = crf_viterbi_decode(potentials, transitions, mask, start, end)
    assert to_numpy(decoded)[1, 0] == 0 and to_numpy(best)[1] == pytest.approx(0.0)


# ----------------------------------------------------------------------------------------------
# the layer
# ----------------------------------------------------------------------------------------------


def _set_crf_weights(crf, transitions, start=None, end=None):
    crf.transitions.assign(transitions)
    if start is not None:
        crf.start_transitions.assign(start)
        crf.end_transitions.assign(end)


def test_layer_methods_and_loss_match_brute_force():
    potentials, tags, mask, transitions, start, end = _random_case(3)
    crf = CRF(NUM_TAGS, use_start_end_transitions=True)
    out = crf(potentials)
    np.testing.assert_array_equal(to_numpy(out), potentials)  # call is the identity
    _set_crf_weights(crf, transitions, start, end)
    expected = brute_force(potentials, tags, LENGTHS, transitions, start, end)

    np.testing.assert_allclose(
        to_numpy(crf.log_likelihood(potentials, tags, mask)), expected["score"] - expected["log_norm"], atol=1e-5
    )
    # `loss` reads the padding from negative gold tags.
    y_true = np.where(mask > 0, tags, -1)
    np.testing.assert_allclose(
        to_numpy(crf.loss(y_true, potentials)), expected["log_norm"] - expected["score"], atol=1e-5
    )
    decoded_expected = brute_force(potentials, tags, LENGTHS, transitions, start, end)["best_tags"]
    decoded, _ = crf.viterbi_decode(potentials, mask)
    np.testing.assert_array_equal(to_numpy(decoded), decoded_expected)


class _NegativeLogLikelihood(keras.layers.Layer):
    """Test wrapper: model output = per-sequence NLL, so autodiff sees the CRF's variables."""

    def __init__(self, crf, **kwargs):
        super().__init__(**kwargs)
        self.crf = crf

    def call(self, potentials, tags, mask):
        return -self.crf.log_likelihood(potentials, tags, mask)


def test_gradients_are_expected_minus_observed_counts():
    """d(-log p)/d transitions = E[transition counts] - gold counts; d/d potentials = marginals - one-hot."""
    potentials, tags, mask, transitions, _, _ = _random_case(4)
    crf = CRF(NUM_TAGS)
    crf.build((None, None, NUM_TAGS))
    _set_crf_weights(crf, transitions)
    pot_in = keras.Input((MAX_LEN, NUM_TAGS))
    tags_in = keras.Input((MAX_LEN,), dtype="int32")
    mask_in = keras.Input((MAX_LEN,))
    scale = keras.layers.Dense(NUM_TAGS, use_bias=False, kernel_initializer="identity", name="scale")
    model = keras.Model([pot_in, tags_in, mask_in], _NegativeLogLikelihood(crf)(scale(pot_in), tags_in, mask_in))

    grads = trainable_gradients(model, [potentials, tags, mask], lambda nll: keras.ops.sum(nll))
    names = [v.path for v in model.trainable_variables]
    grad_of = dict(zip(names, grads))

    expected = brute_force(potentials, tags, LENGTHS, transitions)
    gold_counts = np.zeros_like(transitions)
    one_hot = np.zeros_like(potentials)
    for b, length in enumerate(LENGTHS):
        for t in range(1, length):
            gold_counts[tags[b, t - 1], tags[b, t]] += 1
        for t in range(length):
            one_hot[b, t, tags[b, t]] = 1
    expected_transition_grad = expected["expected_transitions"].sum(0) - gold_counts
    np.testing.assert_allclose(grad_of[crf.transitions.path], expected_transition_grad, atol=1e-4)
    # Through the identity Dense kernel: dL/dW = sum_{b,t} x_bt^T (marginals - one_hot)_bt.
    d_potentials = expected["marginals"] - one_hot
    expected_kernel_grad = np.einsum("bti,btj->ij", potentials, d_potentials)
    np.testing.assert_allclose(grad_of["scale/kernel"], expected_kernel_grad, atol=1e-4)


def test_training_with_fit_reduces_negative_log_likelihood():
    rng = np.random.RandomState(0)
    batch, steps, features = 16, 5, 6
    x = rng.normal(size=(batch, steps, features)).astype("float32")
    # Tags with structure: tag depends on the sign of the first feature and on the previous tag.
    y = (x[..., 0] > 0).astype("int32") + (np.roll(x[..., 1], 1, axis=1) > 1).astype("int32")
    lengths = rng.randint(1, steps + 1, size=batch)
    mask = np.arange(steps)[None] < lengths[:, None]
    y_true = np.where(mask, y, -1).astype("int32")

    crf = CRF(NUM_TAGS, use_start_end_transitions=True, name="crf")
    inputs = keras.Input((None, features))  # T unknown while the functional model is built
    potentials = crf(keras.layers.Dense(NUM_TAGS, name="emissions")(inputs))
    model = keras.Model(inputs, potentials)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=crf.loss)

    transitions_before = to_numpy(crf.transitions).copy()
    before = float(np.mean(to_numpy(crf.loss(y_true, model(x)))))
    model.fit(x, y_true, batch_size=batch, epochs=15, verbose=0, shuffle=False)
    after = float(np.mean(to_numpy(crf.loss(y_true, model(x)))))

    assert after < 0.7 * before
    assert not np.allclose(to_numpy(crf.transitions), transitions_before)  # the CRF itself learned
    # The NLL reported by Keras is the mean of the per-sequence NLL.
    assert model.evaluate(x, y_true, batch_size=batch, verbose=0) == pytest.approx(after, rel=1e-4)


class _Decode(keras.layers.Layer):
    def __init__(self, crf, **kwargs):
        super().__init__(**kwargs)
        self.crf = crf

    def call(self, potentials, mask):
        tags, _ = self.crf.viterbi_decode(potentials, mask)
        return tags

    def compute_output_spec(self, potentials, mask):
        return keras.KerasTensor(potentials.shape[:2], dtype="int32")


def test_viterbi_inside_compiled_predict_with_unknown_length():
    potentials, _, mask, transitions, start, end = _random_case(7)
    crf = CRF(NUM_TAGS, use_start_end_transitions=True)
    crf.build((None, None, NUM_TAGS))
    _set_crf_weights(crf, transitions, start, end)
    pot_in = keras.Input((None, NUM_TAGS))
    mask_in = keras.Input((None,))
    model = keras.Model([pot_in, mask_in], _Decode(crf)(pot_in, mask_in))
    decoded = model.predict([potentials, mask], batch_size=len(LENGTHS), verbose=0)
    expected = brute_force(potentials, np.zeros_like(mask, "int32"), LENGTHS, transitions, start, end)
    np.testing.assert_array_equal(np.asarray(decoded), expected["best_tags"])
    # The same model on single-token inputs (a one-step scan).
    decoded = model.predict([potentials[:, :1], mask[:, :1]], batch_size=len(LENGTHS), verbose=0)
    expected = brute_force(
        potentials[:, :1], np.zeros_like(mask[:, :1], "int32"), np.minimum(LENGTHS, 1), transitions, start, end
    )
    np.testing.assert_array_equal(np.asarray(decoded), expected["best_tags"])


def test_config_round_trip_and_saving(tmp_path):
    crf = CRF(
        4,
        use_start_end_transitions=True,
        transitions_initializer=keras.initializers.RandomNormal(stddev=0.5, seed=3),
        transitions_regularizer=keras.regularizers.L2(0.01),
        name="tagger_crf",
    )
    config = crf.get_config()
    clone = CRF.from_config(config)
    assert clone.get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(crf))
    assert isinstance(restored, CRF) and restored.get_config() == config

    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, crf(inputs))
    path = str(tmp_path / "crf.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, compile=False)
    loaded_crf = loaded.get_layer("tagger_crf")
    for name in ("transitions", "start_transitions", "end_transitions"):
        np.testing.assert_array_equal(to_numpy(getattr(loaded_crf, name)), to_numpy(getattr(crf, name)))
    potentials = np.random.RandomState(0).normal(size=(2, 3, 4)).astype("float32")
    np.testing.assert_array_equal(
        to_numpy(loaded_crf.viterbi_decode(potentials)[0]), to_numpy(crf.viterbi_decode(potentials)[0])
    )


def test_wrong_number_of_tags_is_refused():
    with pytest.raises(ValueError, match="last dimension 3"):
        CRF(3)(np.zeros((1, 2, 4), "float32"))
