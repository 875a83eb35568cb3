"""fleetsched: a multi-cluster scheduler for Karmada-style control planes.

Subpackages: ``api`` (typed Karmada kinds), ``scheduler`` (the pure scheduling core),
``estimator`` (general and accurate replica estimators), ``webhook`` (admission rules and
server), ``controller`` (kopf wiring for the scheduler operator and the policy controller).
"""

__version__ = "0.1.0"
