"""What a run writes, and reading it back.

  names.py      the names the output adds (#id, seed_id, _readout/seed)
  schema.py     the schema of the sampled graphs (graph_schema.pbtxt beside the records)
  encoder.py    an assembled shard -> tf.train.Example bytes, straight from its arrays
  reference.py  an assembled shard -> GraphTensors (the reference the encoder matches)
  files.py      --output parsed into shard names; atomic file writes
  shards.py     one shard start to finish: assemble, encode, write
  report.py     the run report as JSON and as a summary for people
  folder.py     an output folder read back: its schema and shard files
  seek.py       records found by context values (seed id) without decoding them
  stats.py      sample-stats' numbers: per-record counts and per-feature summaries
  sketches.py   the mergeable summaries behind them (moments, quantiles, top values)
  stats_summary.py  the numbers as a short text summary (base install)
  stats_plots.py, stats_report.py   its figures and HTML report (matplotlib: [stats])
  stats_frame.py  the same numbers as pandas DataFrames, for notebooks ([stats])
"""
