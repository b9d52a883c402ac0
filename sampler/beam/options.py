"""Which command-line flags are Beam pipeline options.

`sample` passes the flags it does not know itself to Beam, and Beam only warns about
flags no option class knows (then samples with defaults: `--seed-file x` would sample
every node). So leftover flags are checked against Beam's own option parsers first.
"""
from __future__ import annotations

import argparse
import difflib

from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser


def _runner_options(args: list[str]) -> None:
    """Registers the option classes of runners that live outside pipeline_options."""
    if any("DaskRunner" in a for a in args):
        try:
            import apache_beam.runners.dask.dask_runner  # noqa: F401  registers DaskOptions
        except ImportError:  # dask not installed: its flags stay unknown, Beam says why
            pass


def _parser() -> _BeamArgumentParser:
    parser = _BeamArgumentParser(allow_abbrev=False)
    seen = {}
    stack = list(PipelineOptions.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        seen.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
    for cls in seen.values():
        try:
            cls._add_argparse_args(parser)  # pylint: disable=protected-access
        except argparse.ArgumentError:  # an option two classes define: the first one stays
            continue
    return parser


def beam_flag_names(args: list[str] = ()) -> list[str]:
    _runner_options(list(args))
    return sorted(s for s in _parser()._option_string_actions if s.startswith("--"))


def unknown_flags(args: list[str]) -> list[str]:
    """The flags in `args` that no Beam pipeline option knows, in order."""
    _runner_options(args)
    _, unknown = _parser().parse_known_args(args)
    return [a.split("=", 1)[0] for a in unknown if a.startswith("-")]


def closest(flag: str, candidates: list[str]) -> str | None:
    match = difflib.get_close_matches(flag, candidates, n=1, cutoff=0.6)
    return match[0] if match else None
