"""The project's exception family.

Every error a user can cause (a bad schema, spec, table or record) is raised as
a SamplerError subclass with a one-line message naming the file, line, op, set or
field and the value found, so the CLI prints one clean line instead of a
traceback. SamplerError subclasses ValueError so callers that expect ValueError
still catch it.
"""


class SamplerError(ValueError):
    """Base of every error caused by user input."""


class SchemaError(SamplerError):
    """The graph schema is unreadable or inconsistent."""


class SpecError(SamplerError):
    """The sampling spec is unreadable or inconsistent with the schema."""


class TableError(SamplerError):
    """A table file is missing, unreadable or disagrees with the schema."""


class GraphTensorError(SamplerError):
    """A GraphTensor or its tf.Example encoding breaks a rule."""


def one_line(text: str) -> str:
    """Collapses whitespace so a message from a library stays on one line."""
    return " ".join(str(text).split())


MESSAGE_LIMIT = 600  # characters of one error line: a value quoted from the input is cut


def printable(text: str, keep: str = "") -> str:
    """`text` with control and other non-printable characters (escape sequences, carriage
    returns, bidirectional overrides) shown escaped (`\\x1b`, `\\r`, `\\u202e`), so that
    text quoted from input never acts on the terminal it is printed to. Characters in
    `keep` (a command's own "\\n" between lines) stay as they are."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def message_line(error, limit: int = MESSAGE_LIMIT) -> str:
    """An error as the one line a command prints: line breaks and other control
    characters quoted from the input (a CSV header holding a quoted newline, a binary
    id) are escaped, never printed, and a very long message is cut."""
    text = printable(str(error))
    if len(text) > limit:
        text = text[:limit - 4] + " ..."
    return text


def text_format_message(error, source: str) -> str:
    """A protobuf text-format ParseError as `<source>: line L column C: <what>`.

    Our message types live in packages of our own (see proto/); users know them
    by TF-GNN's names, so the package prefix is dropped from the text.
    """
    text = one_line(error)
    line, column = getattr(error, "GetLine", lambda: None)(), getattr(
        error, "GetColumn", lambda: None)()
    if line is not None:
        text = text.split(" : ", 1)[-1] if " : " in text else text.split(":", 2)[-1].strip()
        if text.startswith("'") and "': " in text:  # drop the echo of the offending token
            text = text[text.rindex("': ") + 3:]
        text = f"line {line} column {column}: {text}"
    for prefix in ("graph_sampler.unigraph.", "graph_sampler.sampler.", "graph_sampler.tf."):
        text = text.replace(prefix, "")
    return f"{source}: {text}"


class MissingExtra(SamplerError):
    """A feature needs an optional dependency that is not installed."""


def require_extra(module: str, extra: str, needed_for: str, otherwise: str = ""):
    """Imports and returns `module`, or raises MissingExtra naming the extra to install.

    The base install samples (every format, both engines, Dataflow, BigQuery); heavy
    libraries come with extras (setup.py): [tf] for training, tf.data and TF-GNN
    interop, [stats] for sample-stats' HTML report, [torch] for PyTorch Geometric.
    `otherwise` names a way around it, if any. Only a missing `module` itself is
    reported this way: an installed library that fails to import for another reason
    keeps its own error.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is None or module.split(".")[0] != e.name.split(".")[0]:
            raise
        raise MissingExtra(f"{needed_for} needs {module.split('.')[0]}, which is not "
                           f"installed: pip install 'graph-sampler[{extra}]'"
                           + (f" ({otherwise})" if otherwise else "")) from None
