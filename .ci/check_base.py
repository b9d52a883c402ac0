"""The base install, as `pip install .` gives it: run by `make check-base` with the
base virtualenv's interpreter. Both engines sample the demo graph to the same bytes,
the output commands read it, and no heavy library is installed."""
import filecmp
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "mag_tiny")
BIN = os.path.join(sys.argv[1], "bin")


def run(*command: str) -> None:
    done = subprocess.run([os.path.join(BIN, command[0]), *command[1:]],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"check-base: {' '.join(command[:1])} failed (exit {done.returncode}):\n"
                 f"{done.stderr[-3000:]}")


def main() -> int:
    installed = [m for m in ("tensorflow", "torch", "matplotlib", "pandas")
                 if importlib.util.find_spec(m) is not None]
    if installed:
        print(f"check-base: the base install pulled {', '.join(installed)}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {}
        for engine in ("memory", "beam"):
            outputs[engine] = os.path.join(tmp, engine)
            run("sample", "--graph", DEMO, "--spec", os.path.join(DEMO, "sampling_spec.pbtxt"),
                "--seeds", os.path.join(DEMO, "seeds.csv"), "--output", outputs[engine],
                "--engine", engine)
        shards = sorted(n for n in os.listdir(outputs["memory"]) if n.endswith(".tfrecord"))
        _, differ, missing = filecmp.cmpfiles(outputs["memory"], outputs["beam"], shards,
                                              shallow=False)
        if not shards or differ or missing:
            print(f"check-base: the engines' records differ: {differ + missing}", file=sys.stderr)
            return 1
        run("sample-check", outputs["memory"])
        run("sample-inspect", outputs["memory"], "--max-items", "1")
        run("sample-stats", outputs["memory"], "--no-html", "--quiet")
    print(f"check-base: the base install (no TensorFlow, PyTorch, matplotlib or pandas) "
          f"sampled the demo on both engines to the same {len(shards)} shard(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
