"""TensorBoard's own reader of event files (the `tensorboard` package's `event_accumulator`), for the tests of
the event files that `keras_bert_impl.training.tensorboard_events` writes without TensorFlow."""

from tensorboard.backend.event_processing import event_accumulator


def tensorboard_scalars(logdir):
    """{tag: {step: value}} of every scalar TensorBoard reads in the event files of the run directory `logdir`."""
    accumulator = event_accumulator.EventAccumulator(logdir, size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    return {tag: {event.step: event.value for event in accumulator.Scalars(tag)}
            for tag in accumulator.Tags()["scalars"]}
