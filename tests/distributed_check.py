"""Run in a fresh process by tests/test_distribute.py: per-step losses single-device vs two replicas (a
classifier, the pretrainer, and sentence encoders trained with in-batch negatives and with CoSENT, whose
losses pair each example with the whole global batch).

TensorFlow: MirroredStrategy over 2 logical CPU devices. JAX: keras.distribution.DataParallel over 2 host
devices (XLA_FLAGS=--xla_force_host_platform_device_count=2, set by the caller). Prints JSON.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402

BACKEND = keras.backend.backend()
if BACKEND == "tensorflow":
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert_impl.training import distribute  # noqa: E402
from keras_bert_impl.models.backbone import BertBackbone  # noqa: E402
from keras_bert_impl.config import BertConfig  # noqa: E402
from keras_bert_impl.models.pretrainer import BertPretrainer  # noqa: E402
from keras_bert_impl.models.sentence_encoder import BertSentenceEncoder  # noqa: E402
from keras_bert_impl.models.sentence_losses import CoSENTLoss, MultipleNegativesRankingLoss  # noqa: E402

CONFIG = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0)
STEPS, BATCH, SEQ, PREDICTIONS = 4, 8, 12, 3


def data(seed=0):
    rng = np.random.RandomState(seed)
    n = STEPS * BATCH
    mask = (np.arange(SEQ)[None] < rng.randint(4, SEQ + 1, size=(n, 1))).astype("int32")
    x = {"token_ids": rng.randint(1, 60, size=(n, SEQ)).astype("int32") * mask,
         "segment_ids": np.zeros((n, SEQ), "int32"), "padding_mask": mask}
    # Uneven masked-LM weights across examples, so per-replica normalization would not be exact.
    weights = (rng.uniform(size=(n, PREDICTIONS)) < 0.6).astype("float32")
    weights[:, 0] = 1.0
    pretrain_x = dict(x, masked_lm_positions=rng.randint(1, 4, size=(n, PREDICTIONS)).astype("int32"))
    pretrain_y = {"masked_lm_ids": rng.randint(1, 60, size=(n, PREDICTIONS)).astype("int32"),
                  "masked_lm_weights": weights, "next_sentence_labels": rng.randint(0, 2, size=(n,)).astype("int32")}
    return x, rng.randint(0, 3, size=(n,)).astype("int32"), pretrain_x, pretrain_y


def sentence_data(columns, seed=1):
    """Token ids of `columns` texts per example [n, columns, SEQ], and a score per example."""
    rng = np.random.RandomState(seed)
    n = STEPS * BATCH
    mask = (np.arange(SEQ)[None, None] < rng.randint(3, SEQ + 1, size=(n, columns, 1))).astype("int32")
    x = {"token_ids": rng.randint(1, 60, size=(n, columns, SEQ)).astype("int32") * mask,
         "segment_ids": np.zeros((n, columns, SEQ), "int32"), "padding_mask": mask}
    return x, rng.uniform(0, 5, size=(n,)).astype("float32")


def optimizer():
    # Plain gradient descent: an update linear in the gradient, so equality is exact up to float
    # rounding. Adam-type updates divide by sqrt(v) and amplify the last-bit differences of summing the
    # batch in two halves on near-cancelling gradients (about 1e-4 relative in the loss at lr 1e-4).
    return keras.optimizers.SGD(0.5)


def classifier():
    backbone = BertBackbone(CONFIG)
    logits = keras.layers.Dense(3, name="logits")(backbone.output["pooled_output"])
    model = keras.Model(backbone.input, logits)
    model.compile(optimizer=optimizer(), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def pretrainer():
    model = BertPretrainer(BertBackbone(CONFIG))
    model.compile(optimizer=optimizer())
    return model


def sentence_encoder(loss):
    def build():
        model = BertSentenceEncoder(BertBackbone(CONFIG), normalize=True)
        model.compile(optimizer=optimizer(), loss=loss)
        return model

    return build


class StepLosses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_epoch_end(self, epoch, logs=None):  # one step per epoch: logs hold that step's loss
        self.losses.append(float(logs["loss"]))


def run(build, x, y, initial_weights, scope):
    with scope():
        model = build()
    model.set_weights(initial_weights)
    record = StepLosses()
    model.fit(x, y, batch_size=BATCH, epochs=STEPS, steps_per_epoch=1, shuffle=False, verbose=0, callbacks=[record])
    return record.losses


def clipping_check(distribution):
    """Replicas holding different gradient shares end up with the clipped GLOBAL gradient."""
    import tensorflow as tf

    from keras_bert_impl.training.optimization import AdamWeightDecay

    with distribution.scope():
        optimizer = AdamWeightDecay(1e-3, global_clipnorm=1.0)
    shares = [[np.full((3,), 2.0, "float32"), np.full((2,), -1.0, "float32")],
              [np.full((3,), 1.0, "float32"), np.full((2,), 3.0, "float32")]]

    def clip_share():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        grads = [tf.gather(tf.constant([shares[0][i], shares[1][i]]), replica) for i in range(2)]
        return optimizer._clip_gradients(grads)

    per_replica = distribution.tf_strategy.run(clip_share)
    summed = [distribution.tf_strategy.reduce("SUM", g, axis=None).numpy().tolist() for g in per_replica]
    global_grads = [shares[0][i] + shares[1][i] for i in range(2)]
    norm = float(np.sqrt(sum((g**2).sum() for g in global_grads)))
    expected = [(g / max(norm, 1.0)).tolist() for g in global_grads]
    return {"summed": summed, "expected": expected}


def main():
    import contextlib

    x, labels, pretrain_x, pretrain_y = data()
    triplets, _ = sentence_data(3)
    pairs, scores = sentence_data(2)
    cases = {  # name: (build, x, y)
        "classifier": (classifier, x, labels),
        "pretrainer": (pretrainer, pretrain_x, pretrain_y),
        "sentence_ranking": (sentence_encoder(MultipleNegativesRankingLoss(symmetric=True)), triplets,
                             np.zeros((len(scores),), "float32")),
        "sentence_cosent": (sentence_encoder(CoSENTLoss()), pairs, scores),
    }
    initial = {name: build().get_weights() for name, (build, _, _) in cases.items()}
    single = {name: run(build, x, y, initial[name], contextlib.nullcontext) for name, (build, x, y) in cases.items()}
    distribution = distribute.get_distribution(sys.argv[1])
    replicated = {name: run(build, x, y, initial[name], distribution.scope) for name, (build, x, y) in cases.items()}
    result = {"name": distribution.name, "replicas": distribution.num_replicas, "single": single,
              "replicated": replicated}
    if distribution.tf_strategy is not None:
        result["clipping"] = clipping_check(distribution)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
