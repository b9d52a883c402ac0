"""unigraph.beam.shuffle: the grouping transforms count the encoded bytes they move,
and group exactly as Beam's own."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from tests.sampler.beam.tiny import test_pipeline
from unigraph.beam.element_codec import encoded_size
from unigraph.beam.shuffle import CoGroupByKey, GroupByKey, shuffled

LEFT = [(1, np.arange(5)), (2, np.arange(100, dtype=np.int32)), (1, b"xyz")]
RIGHT = [(2, "two"), (3, None)]


def _size(elements, tag=None):
    """Encoded bytes of (key, value) elements; a CoGroupByKey's input moves its tag too."""
    return sum(encoded_size(k) + encoded_size(v if tag is None else (tag, v))
               for k, v in elements)


def test_counts_every_input_of_every_grouping_by_step():
    p = test_pipeline()
    left = p | "Left" >> beam.Create(LEFT)
    right = p | "Right" >> beam.Create(RIGHT)
    grouped = (left | "ByKey" >> GroupByKey()
               | beam.MapTuple(lambda k, vs: (k, sorted(len(v) for v in vs))))
    joined = ({"left": left, "right": right} | "Join" >> CoGroupByKey()
              | beam.MapTuple(lambda k, g: (k, len(list(g["left"])), list(g["right"]))))
    assert_that(grouped, equal_to([(1, [3, 5]), (2, [100])]), label="Grouped")
    assert_that(joined, equal_to([(1, 2, []), (2, 1, ["two"]), (3, 0, [None])]),
                label="Joined")
    counted = shuffled(p.run())
    assert counted["by_step"] == {"ByKey": _size(LEFT), "Join/left": _size(LEFT, "left"),
                                  "Join/right": _size(RIGHT, "right")}
    assert counted["bytes"] == _size(LEFT) + _size(LEFT, "left") + _size(RIGHT, "right")
    assert counted["elements"] == 2 * len(LEFT) + len(RIGHT)


def test_a_runner_without_metrics_reports_nothing():
    class NoMetrics:
        def metrics(self):
            raise NotImplementedError

    assert shuffled(NoMetrics()) is None
