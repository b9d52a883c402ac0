"""unigraph.beam.steps: Map/FlatMap steps behave as Beam's, and Beam inspects a DoFn's
methods once per class, not at every look."""
import inspect

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.core import get_function_args_defaults
from apache_beam.transforms.userstate import get_dofn_specs

from tests.sampler.beam.tiny import test_pipeline
from unigraph.beam.steps import DoFn, FlatMap, FlatMapTuple, Map, MapTuple


class _Twice(DoFn):
    def process(self, element, times=2):
        yield element * times


def test_steps_give_what_beams_give():
    p = test_pipeline()
    numbers = p | beam.Create([1, 2, 3])
    pairs = p | "Pairs" >> beam.Create([(1, "a"), (2, "b")])
    assert_that(numbers | Map(lambda x, k: x + k, 10), equal_to([11, 12, 13]), label="Map")
    assert_that(numbers | FlatMap(lambda x: [x] * x), equal_to([1, 2, 2, 3, 3, 3]),
                label="FlatMap")
    assert_that(numbers | "None" >> FlatMap(lambda x: None), equal_to([]), label="None")
    assert_that(pairs | MapTuple(lambda k, v, s: v * k + s, "!"), equal_to(["a!", "bb!"]),
                label="MapTuple")
    assert_that(pairs | FlatMapTuple(lambda k, v: [v] * k), equal_to(["a", "b", "b"]),
                label="FlatMapTuple")
    assert_that(numbers | beam.ParDo(_Twice()), equal_to([2, 4, 6]), label="DoFn")
    p.run()


def test_signatures_are_inspected_once_per_class(monkeypatch):
    fn = _Twice()
    assert fn._inspect_process() == get_function_args_defaults(fn.process) == (
        ["element", "times"], [2])
    get_dofn_specs(fn)  # fills the cache for every method
    looks = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda f, **kw: looks.append(f) or real(f, **kw))
    for _ in range(3):
        assert get_dofn_specs(_Twice()) == (set(), set())
    assert looks == []
    get_dofn_specs(beam.Map(len).fn)  # Beam's own DoFns still look every time
    assert looks


def test_output_types_are_any_without_inference(monkeypatch):
    from apache_beam.typehints import trivial_inference

    monkeypatch.setattr(trivial_inference, "infer_return_type",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("inferred")))
    assert _Twice().infer_output_type(int) is beam.typehints.Any


def test_state_specs_are_read_once_per_class_and_beams_dofns_as_before(monkeypatch):
    from apache_beam.transforms import userstate

    from unigraph.beam import steps

    reads = []
    real = steps._beam_dofn_specs
    monkeypatch.setattr(steps, "_beam_dofn_specs", lambda fn: reads.append(fn) or real(fn))
    monkeypatch.setattr(steps, "_SPECS", {})
    for _ in range(3):  # how Beam asks, from its own modules
        assert userstate.get_dofn_specs(_Twice()) == (set(), set())
        assert not userstate.is_stateful_dofn(_Twice())
    assert len(reads) == 1
    beams = beam.Map(len).fn
    del reads[:]
    userstate.get_dofn_specs(beams)
    userstate.get_dofn_specs(beams)
    assert reads == [beams, beams]
