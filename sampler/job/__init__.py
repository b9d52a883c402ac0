"""The job every engine runs: a checked plan plus where the output goes and how the
work is cut (output shards, node buckets), and the progress lines engines print.

  job.py        SamplingJob, and the bucket count chosen from the input's size
  preflight.py  checks before anything runs: output location, seeds, seed set
  resources.py  cores and memory available, and the memory a graph will need
  progress.py   throttled progress lines from inside workers
"""
