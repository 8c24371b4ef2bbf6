#!/usr/bin/env bash
# Generates the Python messages and gRPC stubs from the repository's proto/
# into examples/python/gen/ (or the directory given as the first argument).
# Run it with the Python that has requirements.txt installed, e.g.
#   PYTHON=.venv/bin/python examples/python/generate.sh
# The output is git-ignored: it belongs to the grpcio-tools version you have.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$here/gen}"
python="${PYTHON:-python3}"
# A relative path (PYTHON=.venv/bin/python) means one from where the script
# was started: make it absolute before the `cd` below changes directory. A
# bare name (python3) is looked up on PATH and stays as it is.
case "$python" in
  /*) ;;
  */*) python="$PWD/$python" ;;
esac

# google/protobuf/struct.proto ships inside grpc_tools; protoc needs its
# directory on the include path to resolve the import.
bundled="$("$python" -c 'import os, grpc_tools; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')"

# Start clean so that a proto removed upstream leaves no stale module behind.
rm -rf "$out"
mkdir -p "$out"
cd "$repo/proto"
"$python" -m grpc_tools.protoc -I . -I "$bundled" \
  --python_out="$out" --grpc_python_out="$out" \
  battlelog/v1/*.proto
echo "generated battlelog.v1 into $out" >&2
