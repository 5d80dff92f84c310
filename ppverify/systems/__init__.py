"""Systems and presets: the YAML presets shipped in ``ppverify/models`` and read from files, the
hardware model (link tiers, all-reduce times), the LLM cost model, the replica and data-parallel
all-reduce placed in a step, and the resolution of a system, a model and training settings into
the cost and communication models every command uses.

Example:
    >>> from ppverify.systems.system import load_system
    >>> load_system("dgx-h100").intra.bandwidth_Bps > load_system("dgx-h100").inter.bandwidth_Bps
    True
"""
