"""In-tree scheduler plugins, one per module, named as in Karmada."""
