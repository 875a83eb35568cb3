"""Example out-of-tree fleetsched scheduler plugins, one per module.

* ``ExampleCost`` (``cost.py``): Score + NormalizeScore from a cluster's cost label; cheapest = 100.
* ``ExampleTenant`` (``tenant.py``): Filter: a binding goes only to clusters labelled for its tenant.
* ``ExampleFlaky`` (``flaky.py``): raises on purpose, to show (and test) plugin failure handling.

Each is made known to fleetsched by an entry point of the group ``fleetsched.plugins`` in
``pyproject.toml``; each imports only ``fleetsched.plugin``, the public plugin API.
"""
