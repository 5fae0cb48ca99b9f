"""The input gradient of BERT's dense products on TensorFlow's CPU, dy @ kernel^T, two ways, and the whole
forward and backward of `tf_ops.dense_with_transposed_gradient` against Keras' Dense product:

    python benchmarks/tf_dense_paths.py [--rounds 25]

"transpose_b": `tf.matmul(dy, kernel, transpose_b=True)`, TensorFlow's MatMul gradient; "written out": the
product with the kernel's transpose computed first (`backends/tf_ops._input_gradient_written_out`, a 3D
transpose, which TensorFlow's graph optimizer leaves in place), what `tf_ops.dense_with_transposed_gradient`
computes where in <= out. Then one forward and backward (output, input, kernel and bias gradients) of
`tf.matmul` + bias as Keras' Dense computes it, and of `tf_ops.dense_with_transposed_gradient`. Shapes:
bert_small's at 16 x 128 (2048 rows) and bert_base's at 8 x 128 (1024 rows), as (rows, in, out). Each case
is a tf.function; the cases run in turn, round by round. Prints the median milliseconds, the GFLOP/s and
the largest difference between the two ways relative to the largest value. Not a test.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from keras_bert_impl.backends import tf_ops  # noqa: E402

SHAPES = [  # (rows, in, out): the attention's projections, the feed-forward's two
    (2048, 512, 512), (2048, 512, 2048), (2048, 2048, 512),
    (1024, 768, 768), (1024, 768, 3072), (1024, 3072, 768),
]


def keras_dense(x, kernel, bias):
    return tf.matmul(x, kernel) + bias


def forward_backward(product):
    @tf.function
    def run(x, kernel, bias, upstream):
        with tf.GradientTape() as tape:
            tape.watch([x, kernel, bias])
            y = product(x, kernel, bias)
        return [y] + tape.gradient(y, [x, kernel, bias], output_gradients=upstream)

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    print(f"tensorflow {tf.__version__}")
    for rows, fan_in, fan_out in SHAPES:
        tf.random.set_seed(0)
        x, dy = tf.random.normal([rows, fan_in]), tf.random.normal([rows, fan_out])
        kernel, bias = tf.random.normal([fan_in, fan_out]) * 0.02, tf.random.normal([fan_out])
        cases = {
            "transpose_b": (tf.function(lambda d, k: tf.matmul(d, k, transpose_b=True)), (dy, kernel)),
            "written out": (tf.function(tf_ops._input_gradient_written_out), (dy, kernel)),
            "keras dense": (forward_backward(keras_dense), (x, kernel, bias, dy)),
            "transposed gradient": (forward_backward(tf_ops.dense_with_transposed_gradient), (x, kernel, bias, dy)),
        }
        results = {name: fn(*inputs) for name, (fn, inputs) in cases.items()}
        error = max(float(tf.reduce_max(tf.abs(a - b)) / tf.reduce_max(tf.abs(a)))
                    for a, b in zip(results["keras dense"], results["transposed gradient"]))
        gradient_error = float(tf.reduce_max(tf.abs(results["transpose_b"] - results["written out"]))
                               / tf.reduce_max(tf.abs(results["transpose_b"])))
        times = {name: [] for name in cases}
        for _ in range(args.rounds + 2):
            for name, (fn, inputs) in cases.items():
                start = time.perf_counter()
                [t.numpy() for t in tf.nest.flatten(fn(*inputs))]
                times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(t[2:]) for name, t in times.items()}
        flops = 2 * rows * fan_in * fan_out
        print(f"[{rows}, {fan_out}] x [{fan_in}, {fan_out}]^T: transpose_b {median['transpose_b'] * 1e3:.2f} ms "
              f"({flops / median['transpose_b'] / 1e9:.0f} GFLOP/s), written out {median['written out'] * 1e3:.2f} ms "
              f"({flops / median['written out'] / 1e9:.0f} GFLOP/s; max relative difference {gradient_error:.1e}); "
              f"forward and backward: Keras' product {median['keras dense'] * 1e3:.2f} ms, dense_with_transposed_gradient "
              f"{median['transposed gradient'] * 1e3:.2f} ms ({median['keras dense'] / median['transposed gradient']:.2f}x; "
              f"max relative difference {error:.1e})")


if __name__ == "__main__":
    main()
