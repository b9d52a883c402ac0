"""Regenerates the committed _pb2 modules from the .proto sources in proto/.

Run as `make protos` (or `python -m pipelines.tools.gen_protos`). The generated
modules live inside the packages that own them, never in a top-level `proto`
package: apache-beam[gcp] installs proto-plus, whose import name is `proto`.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from pipelines import REPO_ROOT

# .proto source (relative to the repo root) -> where its _pb2 module lives.
PROTO_MODULES = {
    "proto/graph_schema.proto": "unigraph/protos/graph_schema_pb2.py",
    "proto/example.proto": "unigraph/protos/example_pb2.py",
    "proto/sampling_spec.proto": "sampler/plan/sampling_spec_pb2.py",
    "proto/feature_spec.proto": "sampler/features/feature_spec_pb2.py",
}



def compile_protos(out_dir: str, *, descriptor_set: str | None = None) -> None:
    """Runs protoc (from grpcio-tools, a dev dependency) on every source, into out_dir.

    In a child process: protoc's C++ runtime must not share a process with
    TensorFlow's, which a test session may have loaded.
    """
    args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO_ROOT}",
            f"--python_out={out_dir}"]
    if descriptor_set:
        args.append(f"--descriptor_set_out={descriptor_set}")
    args += [os.path.join(REPO_ROOT, p) for p in PROTO_MODULES]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"protoc failed: {result.stderr.strip()}")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        compile_protos(tmp)
        for source, module in PROTO_MODULES.items():
            generated = os.path.join(tmp, source.replace(".proto", "_pb2.py"))
            shutil.copyfile(generated, os.path.join(REPO_ROOT, module))
            print(f"{source} -> {module}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
