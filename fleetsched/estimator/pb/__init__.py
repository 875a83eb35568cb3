"""Generated protobuf and gRPC code for the estimator wire protocol.

Do not edit: run hack/gen_proto.py.
"""
