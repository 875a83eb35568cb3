"""The WorkloadRebalancer controller (Karmada's ``workload-rebalancer``), run inside the policy controller.

``decisions``: what a reconcile decides, as pure functions (which bindings, the status, the TTL);
``reconcile``: the reads and writes, a mixin of ``PolicyController``.
"""
