"""YAML presets shipped with ppverify (installed as the ``ppverify.models`` package data):
``systems/*.yaml`` (devices, nodes, links) and ``llms/*.yaml`` (public model configurations)."""
