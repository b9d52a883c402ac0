"""The features `synthetic-graph --extra-features` adds: every kind a feature spec turns
into tensors (docs/features.md), so the benchmarks and tests exercise them.

  paper.venue       DT_STRING        "venue/<k>", k Zipf(1.1) over VENUES venues
  paper.tags        DT_STRING [-1]   0-6 tags per paper (mean about 2.4), "tag/<k>",
                                     k Zipf(1.0) over TAGS tags: a multi-valued tag list
  paper.tokens      DT_INT64  [-1]   4-24 token ids per paper, Zipf(1.05) over TOKENS:
                                     a ragged token list (a title, tokenized)
  cites.intent      DT_STRING        a citation's intent, one of INTENTS
  writes.position   DT_INT64         an author's position on the paper, 1-8
  (written, the reversed writes table, has it too)

Every value is a pure function of (seed, the row's index in its table): a splitmix64
chain keys each draw, so a table streamed in batches of any size gets the same values,
and adding these columns changes nothing else in the graph (no numpy stream is drawn
from). With the planted venue task (`--planted venue`, synthetic_model.py) the venues come
from the task instead: the label is the class of the venues of the papers a paper cites.
"""
from __future__ import annotations

import numpy as np

from unigraph.columnar.ragged import Ragged
from unigraph.encoding import splitmix

VENUES, TAGS, TOKENS = 1_000, 5_000, 20_000
MAX_TAGS, TOKENS_PER_PAPER = 6, (4, 24)
INTENTS = (b"background", b"method", b"result", b"comparison")
INTENT_WEIGHTS = (0.55, 0.25, 0.12, 0.08)
MAX_POSITION = 8
VENUES_PER_CLASS = 8  # the planted venue task's venues of one class
# Stream numbers of the draws (fixed forever, so the tables stay the same).
_STREAMS = {"venue": 101, "tag_count": 102, "tag": 103, "token_count": 104, "token": 105,
            "intent": 106, "position": 107}

PAPER_FEATURES = {"venue": ("DT_STRING", ()), "tags": ("DT_STRING", (-1,)),
                  "tokens": ("DT_INT64", (-1,))}
EDGE_FEATURES = {"cites": {"intent": ("DT_STRING", ())},
                 "writes": {"position": ("DT_INT64", ())}}


def uniforms(seed: int, stream: str, index: np.ndarray, draw: np.ndarray | int = 0
             ) -> np.ndarray:
    """A uniform [0, 1) per (row index, draw number): splitmix64 of (seed, stream, row,
    draw), the top 53 bits."""
    state = splitmix.step(splitmix.step(np.uint64(seed), np.uint64(_STREAMS[stream])),
                          np.asarray(index, np.int64).view(np.uint64))
    bits = splitmix.step(state, np.asarray(draw, np.int64).astype(np.uint64))
    return (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def _zipf(u: np.ndarray, count: int, exponent: float) -> np.ndarray:
    """Ranks 0..count-1 by their Zipf probability (rank r ~ (r + 1)**-exponent), drawn
    by inverse CDF from uniforms."""
    cdf = np.cumsum(np.arange(1, count + 1, dtype=np.float64) ** -exponent)
    return np.minimum(np.searchsorted(cdf / cdf[-1], u, side="right"), count - 1)


def _names(prefix: bytes, numbers: np.ndarray) -> np.ndarray:
    """b"<prefix><number>" per number, as the object array of bytes the readers give."""
    return np.char.add(prefix, numbers.astype("S")).astype(object)


def _lists(seed: int, index: np.ndarray, stream: str, lengths: np.ndarray) -> tuple:
    """(each value's row, each value's draw number) for `lengths[i]` values of row i."""
    rows = np.repeat(index, lengths)
    draws = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return uniforms(seed, stream, rows, draws)


def paper_features(seed: int, index: np.ndarray, venues: np.ndarray | None = None) -> dict:
    """venue, tags and tokens of the papers with these row indices (`venues`: each
    paper's venue number, given by the planted task)."""
    index = np.asarray(index, np.int64)
    if venues is None:
        venues = _zipf(uniforms(seed, "venue", index), VENUES, 1.1)
    # Tags: 0-6 per paper, Binomial(6, 0.4)-shaped, from the uniforms of 6 draws.
    tag_counts = (uniforms(seed, "tag_count", index[:, None], np.arange(MAX_TAGS)[None, :])
                  < 0.4).sum(axis=1).astype(np.int64)
    tags = _zipf(_lists(seed, index, "tag", tag_counts), TAGS, 1.0)
    low, high = TOKENS_PER_PAPER
    token_counts = low + np.floor(uniforms(seed, "token_count", index)
                                  * (high - low + 1)).astype(np.int64)
    tokens = _zipf(_lists(seed, index, "token", token_counts), TOKENS, 1.05).astype(np.int64)
    return {"venue": _names(b"venue/", venues),
            "tags": Ragged(_names(b"tag/", tags), tag_counts),
            "tokens": Ragged(tokens, token_counts)}


def planted_venues(seed: int, index: np.ndarray, colours: np.ndarray,
                   num_classes: int) -> np.ndarray:
    """The venue numbers of the planted venue task: a paper of colour c publishes in one of
    VENUES_PER_CLASS venues of that colour, c + num_classes * k (k uniform), so a venue's
    number modulo num_classes is its class and no single venue is the class."""
    k = np.floor(uniforms(seed, "venue", index) * VENUES_PER_CLASS).astype(np.int64)
    return np.asarray(colours, np.int64) + num_classes * k


def venue_colours(venues: np.ndarray, num_classes: int) -> np.ndarray:
    """The colour (class) of each planted venue number."""
    return np.asarray(venues, np.int64) % num_classes


def edge_features(seed: int, name: str, index: np.ndarray) -> dict:
    """The extra features of edge set `name` ("cites", "writes") for these row indices."""
    index = np.asarray(index, np.int64)
    if name == "cites":
        cdf = np.cumsum(INTENT_WEIGHTS)
        which = np.minimum(np.searchsorted(cdf, uniforms(seed, "intent", index),
                                           side="right"), len(INTENTS) - 1)
        return {"intent": np.array(INTENTS, dtype=object)[which]}
    if name == "writes":
        # Mostly early positions: 1 + floor(8 u^2).
        u = uniforms(seed, "position", index)
        return {"position": (1 + np.floor(MAX_POSITION * u * u)).astype(np.int64)}
    return {}


def schema_lines(set_name: str) -> str:
    """The `features { ... }` entries of a set's extra features, for the schema text."""
    declared = PAPER_FEATURES if set_name == "paper" else EDGE_FEATURES.get(
        "writes" if set_name == "written" else set_name, {})
    lines = []
    for name, (dtype, shape) in declared.items():
        dims = "".join(f" dim {{ size: {d} }}" for d in shape)
        shape_text = f" shape {{{dims} }}" if shape else ""
        lines.append(f'features {{ key: "{name}" value {{ dtype: {dtype}{shape_text} }} }}')
    return " ".join(lines)
