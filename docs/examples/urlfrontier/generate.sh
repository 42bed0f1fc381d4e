#!/bin/sh
# Generates the Python gRPC stubs (urlfrontier_pb2.py, urlfrontier_pb2_grpc.py)
# from the project's .proto into this directory. Needs: pip install grpcio grpcio-tools
# The stubs are generated, not committed (see .gitignore).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto_dir="$here/../../../crates/urlfrontier/proto"
python3 -m grpc_tools.protoc -I "$proto_dir" \
  --python_out="$here" --grpc_python_out="$here" \
  "$proto_dir/urlfrontier.proto"
echo "generated $here/urlfrontier_pb2.py and $here/urlfrontier_pb2_grpc.py"
