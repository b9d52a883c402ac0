# Custom worker container for Dataflow: the Beam Python SDK image of the same
# Beam version that setup.py pins, with this project installed on top.
# Run the pipeline with:
#   sample ... --runner DataflowRunner --sdk_container_image <this image> \
#       --sdk_location container
FROM apache/beam_python3.11_sdk:2.77.0

WORKDIR /opt/graph-sampler
COPY setup.py README.md ./
COPY sampler/ sampler/
COPY unigraph/ unigraph/
COPY pipelines/ pipelines/
# The base install only: the workers sample; TensorFlow, matplotlib, pandas and
# PyTorch are extras they never import (tests/test_dockerfile.py keeps it so).
RUN pip install --no-cache-dir .

ENTRYPOINT ["/opt/apache/beam/boot"]
