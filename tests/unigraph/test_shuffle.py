"""unigraph.beam.shuffle: the grouping transforms count the encoded bytes they move,
and group exactly as Beam's own."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that, equal_to

from tests.sampler.beam.tiny import test_pipeline
from unigraph.beam.element_codec import encoded_size
from unigraph.beam.shuffle import CoGroupByKey, GroupByKey, Spread, shuffled

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


def test_grouped_values_travel_as_bytes_and_come_out_as_they_went_in():
    # The runner moves grouped values with Beam's bytes coder: encoded once before the
    # group, decoded once after (the in-process runner would otherwise decode and encode
    # each value once more while grouping).
    p = test_pipeline()
    left = p | "Left" >> beam.Create(LEFT)
    grouped = left | "ByKey" >> GroupByKey()
    joined = {"left": left, "right": p | "Right" >> beam.Create(RIGHT)} | "Join" >> \
        CoGroupByKey()
    spread = p | "Units" >> beam.Create([b"a", (1, np.arange(3))]) | "Spread" >> Spread()
    assert_that(grouped | beam.MapTuple(lambda k, vs: (k, sorted(repr(v) for v in vs))),
                equal_to([(1, sorted([repr(np.arange(5)), repr(b"xyz")])),
                          (2, [repr(np.arange(100, dtype=np.int32))])]), label="Grouped")
    assert_that(joined | beam.MapTuple(lambda k, g: (k, sorted(g))),
                equal_to([(1, ["left", "right"]), (2, ["left", "right"]),
                          (3, ["left", "right"])]), label="Tags")
    assert_that(spread | beam.Map(repr), equal_to([repr(b"a"), repr((1, np.arange(3)))]),
                label="Spread")
    assert _grouped_value_coders(p) == {"beam:coder:bytes:v1"}
    p.run()


def test_on_the_dask_runner_grouped_values_go_as_they_are():
    # The released DaskRunner keeps every step's outputs referenced: encoded copies
    # would stay in worker memory beside the values (tests/pipelines/test_dask_memory.py).
    from apache_beam.options.pipeline_options import PipelineOptions

    from unigraph.beam.runners import DASK_RUNNER

    p = beam.Pipeline(options=PipelineOptions(["--runner", DASK_RUNNER]))
    left = p | "Left" >> beam.Create(LEFT)
    _ = left | "ByKey" >> GroupByKey()
    _ = {"left": left} | "Join" >> CoGroupByKey()
    _ = p | "Units" >> beam.Create([b"a"]) | "Spread" >> Spread()
    assert "beam:coder:bytes:v1" not in _grouped_value_coders(p)


def _grouped_value_coders(p) -> set[str]:
    """The coders of the values entering the ByKey, Join and Spread groups of `p`."""
    proto = p.to_runner_api()
    coders, pcolls = proto.components.coders, proto.components.pcollections
    grouping = [t for t in proto.components.transforms.values()
                if t.unique_name in ("ByKey/Group", "Join/Group", "Spread/Group")]
    assert len(grouping) == 3
    value_coders = set()
    for transform in grouping:
        (into,) = transform.inputs.values()
        kv = coders[pcolls[into].coder_id]
        value_coders.add(coders[kv.component_coder_ids[1]].spec.urn)
    return value_coders
