"""The columnar batches readers produce and the pipeline consumes, and ragged values."""
