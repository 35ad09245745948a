"""Importers: problems and datasets written for other tools, turned into kernelcraft task folders."""
