"""Typed models of the Karmada kinds fleetsched reads and writes."""
