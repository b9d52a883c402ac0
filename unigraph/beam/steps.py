"""The project's DoFns and Map/FlatMap steps: Beam inspects their signatures once.

Beam asks a DoFn for the signature of every one of its methods (about 30, most
inherited) each time it looks for state and timer parameters: twice when the
pipeline is turned into its proto, once more to see whether the step needs keyed
input, and twice for each bundle processor the runner builds. Each look is an
`inspect.signature` call: about 4 ms per DoFn per look, and seconds per job for a
pipeline of some 200 steps (py-spy: 8-10% of a scale-0.01 job's time).

Beam's `core.get_function_arguments(obj, name)` first asks the object for
`_inspect_<name>` (the hook its own CallableWrapperDoFn uses). `DoFn` here answers
that hook from a cache per (class, method): the signature of a class's method does
not change between instances, so each is inspected once per process. And where
pipeline type checks are on (a user's `--pipeline_type_check`, Beam's TestPipeline),
Beam infers each step's output type by interpreting `process`'s bytecode and that of
every function it calls, recursively: minutes for the counting step's walk over an
element's fields. The project's steps declare no types, so `DoFn` answers Any.
Beam also reads each DoFn's state and timer specs (userstate.get_dofn_specs: all of
its methods wrapped and their parameters read) about 20 times per step, proto and
bundles; for these DoFns the specs are read once per class (0.13 CPU-s per job).
`Map`, `FlatMap`, `MapTuple` and `FlatMapTuple` are Beam's steps of the same names
(a function called on each element, with extra arguments) on such a DoFn; the
project's Beam code uses them instead of Beam's (tests/test_beam_rules.py).
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam import typehints
from apache_beam.transforms import userstate
from apache_beam.transforms.core import get_function_args_defaults

_ARGUMENTS: dict[tuple[type, str], tuple] = {}


class DoFn(beam.DoFn):
    """beam.DoFn whose methods' signatures are inspected once per class, and whose output
    type is Any (no bytecode inference)."""

    def infer_output_type(self, input_type):
        return typehints.Any

    def __getattr__(self, name: str):
        # Only for names the instance and its class lack: Beam's `_inspect_<method>` hook.
        if not name.startswith("_inspect_"):
            raise AttributeError(name)
        method = name[len("_inspect_"):]
        key = (type(self), method)
        arguments = _ARGUMENTS.get(key)
        if arguments is None:
            arguments = _ARGUMENTS[key] = get_function_args_defaults(getattr(self, method))
        return lambda: arguments



# A DoFn's state and timer specs follow from its class (module docstring).
_SPECS: dict[type, tuple] = {}
_beam_dofn_specs = userstate.get_dofn_specs


def _dofn_specs(dofn):
    if not isinstance(dofn, DoFn):
        return _beam_dofn_specs(dofn)
    specs = _SPECS.get(type(dofn))
    if specs is None:
        specs = _SPECS[type(dofn)] = _beam_dofn_specs(dofn)
    return specs


userstate.get_dofn_specs = _dofn_specs

class _Call(DoFn):
    """fn(element, *args) (or fn(*element, *args)), one output or each of an iterable."""

    def __init__(self, fn, args: tuple, unpack: bool, flat: bool):
        super().__init__()
        self.fn, self.args, self.unpack, self.flat = fn, args, unpack, flat

    def default_label(self) -> str:
        kind = ("FlatMap" if self.flat else "Map") + ("Tuple" if self.unpack else "")
        return f"{kind}({getattr(self.fn, '__name__', type(self.fn).__name__)})"

    def process(self, element):
        result = (self.fn(*element, *self.args) if self.unpack
                  else self.fn(element, *self.args))
        if not self.flat:
            yield result
        elif result is not None:
            yield from result


def Map(fn, *args) -> beam.ParDo:  # noqa: N802  named like Beam's
    """beam.Map(fn, *args): one output per element."""
    return beam.ParDo(_Call(fn, args, unpack=False, flat=False))


def FlatMap(fn, *args) -> beam.ParDo:  # noqa: N802
    """beam.FlatMap(fn, *args): each item of fn's iterable (None: nothing)."""
    return beam.ParDo(_Call(fn, args, unpack=False, flat=True))


def MapTuple(fn, *args) -> beam.ParDo:  # noqa: N802
    """beam.MapTuple(fn, *args): fn(*element, *args), one output per element."""
    return beam.ParDo(_Call(fn, args, unpack=True, flat=False))


def FlatMapTuple(fn, *args) -> beam.ParDo:  # noqa: N802
    """beam.FlatMapTuple(fn, *args)."""
    return beam.ParDo(_Call(fn, args, unpack=True, flat=True))
