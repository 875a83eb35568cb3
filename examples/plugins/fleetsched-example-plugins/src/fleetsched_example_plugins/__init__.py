"""Example out-of-tree fleetsched scheduler plugins, one per module.

* ``ExampleCost`` (``cost.py``): Score + NormalizeScore from a cluster's cost label; cheapest = 100.
* ``ExampleTenant`` (``tenant.py``): Filter: a binding goes only to clusters labelled for its tenant.
* ``ExampleNamespacePool`` (``namespace_pool.py``): Filter: a namespace's bindings go to its pool of
  clusters, read through the Namespace lister; a binding's own label wins; counts its look-ups.
* ``ExampleFlaky`` (``flaky.py``): raises on purpose, to show (and test) plugin failure handling.

Each is made known to fleetsched by an entry point of the group ``fleetsched.plugins`` in
``pyproject.toml``; each imports only ``fleetsched.plugin``, the public plugin API.
"""
