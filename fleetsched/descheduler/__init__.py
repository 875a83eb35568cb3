"""``fleetsched descheduler``: karmada-descheduler's rounds against fleetsched's (or Karmada's)
estimators; ``core`` decides (pure), ``runner`` and ``command`` do the I/O."""
