"""Leader election for the controllers: the elector lives with the other Leases in
``fleetsched.kube.lease`` (its timings and rules are described there); this module names what the
controllers use of it, so they import leadership from their runtime, not the Kubernetes edge.
"""

from __future__ import annotations

from fleetsched.kube.lease import (
    ApiLeaseStore as ApiLeaseStore,
)
from fleetsched.kube.lease import (
    LeaderElectionConfig as LeaderElectionConfig,
)
from fleetsched.kube.lease import (
    LeaderElector as LeaderElector,
)
from fleetsched.kube.lease import (
    LeaseStore as LeaseStore,
)
