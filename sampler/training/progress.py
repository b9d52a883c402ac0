"""How training shows its progress: Keras's bar on a terminal, one plain line per epoch
in a log (no escape codes, no per-step redraws), or nothing."""
from __future__ import annotations

import time
from typing import Callable

import tensorflow as tf

BAR, EPOCHS, NONE = "bar", "epochs", "none"
CHOICES = (BAR, EPOCHS, NONE)


def epoch_line(epoch: int, epochs: int, logs: dict, seconds: float) -> str:
    """"epoch 3/10: loss 0.4123, accuracy 0.9100, val_loss ..., 2.1 s" (Keras's order)."""
    metrics = "".join(f", {name} {float(value):.4f}" for name, value in (logs or {}).items())
    return f"epoch {epoch + 1}/{epochs}: {seconds:.1f} s{metrics}"


class EpochLines(tf.keras.callbacks.Callback):
    """Writes `epoch_line` at the end of every epoch."""

    def __init__(self, epochs: int, write: Callable[[str], None] = print):
        super().__init__()
        self._epochs, self._write = epochs, write
        self._started = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._started = time.monotonic()

    def on_epoch_end(self, epoch, logs=None):
        self._write(epoch_line(epoch, self._epochs, logs, time.monotonic() - self._started))


def fit_arguments(progress: str, epochs: int) -> dict:
    """`model.fit`'s verbose and callbacks for a `progress` of CHOICES."""
    if progress not in CHOICES:
        raise ValueError(f"progress must be one of {CHOICES}, got {progress!r}")
    if progress == BAR:
        return {"verbose": 1, "callbacks": []}
    return {"verbose": 0, "callbacks": [EpochLines(epochs)] if progress == EPOCHS else []}
