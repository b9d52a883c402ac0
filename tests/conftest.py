"""Test-wide setup.

TF-GNN 1.0.3 imports only with tf-keras and TF_USE_LEGACY_KERAS=1 set before
TensorFlow is first imported, so it is set here, before any test module loads.
"""
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(REPO_ROOT, "tests", "testdata")
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)
