"""The estimator's in-tree plugins, one per file, named as in Karmada."""
