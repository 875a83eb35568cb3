"""The accurate replica estimator: wire protocol, node-level algorithm, gRPC server and client.

The algorithm modules (``model``, ``resources``, ``nodefilter``, ``cache``, ``simulator``, ``plugins``,
``framework``, ``replica``, ``service``) are pure: they import neither grpc nor a Kubernetes client.
``wire`` converts protobuf messages, ``server``/``server_cmd``/``watch`` and ``client`` are the network
edges. Nothing is imported eagerly here so that ``fleetsched simulate`` does not pay for grpc.
"""
