"""A real GCS emulator for tests: gcp-storage-emulator on a free 127.0.0.1 port.

STORAGE_EMULATOR_HOST points both the google-cloud-storage client and, through
unigraph.storage.paths, Beam's GCS filesystem at it. Nothing is mocked.
"""
import os
import socket

import pytest

BUCKET = "graphs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gcs():
    from gcp_storage_emulator import server as emulator  # a test extra: never skipped
    port = free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    old = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
    from google.cloud import storage
    client = storage.Client(project="test")
    try:
        yield client.bucket(BUCKET)
    finally:
        server.stop()
        if old is None:
            del os.environ["STORAGE_EMULATOR_HOST"]
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = old


def upload_folder(bucket, folder, prefix):
    for name in os.listdir(folder):
        bucket.blob(f"{prefix}/{name}").upload_from_filename(os.path.join(folder, name))
    return f"gs://{BUCKET}/{prefix}/graph_schema.pbtxt"
