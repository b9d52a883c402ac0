"""A unigraph's checks: what `sample` would refuse or drop, and what the graph looks like
(graph_check.py; the command is `unigraph-check`)."""
