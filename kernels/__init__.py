"""Pure compute: renumbering, CSR build, BFS, Boruvka MSF and independent verifiers.

Imports NumPy and (optionally) CuPy only. Every public routine takes arrays of one backend
and returns arrays of the same backend; ``kernels.backend`` chooses and moves between them.
"""
