"""Stored runs: the store, the catalogue that names runs and references, the reference
data of published reports."""
