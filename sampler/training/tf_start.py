"""TensorFlow imported for a command-line run: its start-up chatter kept out of the log.

TensorFlow's C++ runtime writes to file descriptor 2 while it loads and when it first
looks for devices (absl's "WARNING: All log messages before absl::InitializeLog()",
"Could not find cuda drivers", "failed call to cuInit" on every CPU machine), and
TF_CPP_MIN_LOG_LEVEL no longer silences all of it. So the import and the device
search run with descriptor 2 pointed at a temporary file; what was written there is
shown again only if the import fails (an error is never hidden). Python-side
warnings of TensorFlow and Keras go to their loggers, set to errors only.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from typing import Iterator

from unigraph.errors import require_extra


@contextlib.contextmanager
def _descriptor_2_captured() -> Iterator[None]:
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def import_tensorflow(needed_for: str, verbose: bool):
    """TensorFlow, imported and its devices found; quietly unless `verbose`. MissingExtra
    (one line naming the [tf] extra) if it is not installed."""
    if verbose:
        return require_extra("tensorflow", "tf", needed_for)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with _descriptor_2_captured():
        tf = require_extra("tensorflow", "tf", needed_for)
        tf.config.list_physical_devices()
        tf.constant(0) + 0  # the first op initializes the devices (and says so)
    tf.get_logger().setLevel(logging.ERROR)
    logging.getLogger("absl").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=r"(tensorflow|tf_keras|keras|tensorflow_gnn)\b")
    return tf
