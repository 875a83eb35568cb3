"""What both binaries share for talking to Kubernetes: the REST client, watches and the JSON logs.

The control-plane scheduler (``fleetsched.controller``) and the member-side estimator
(``fleetsched.estimator``) both sit on top of this package; it imports neither of them, and
knows nothing of bindings, scheduling or estimation.
"""
