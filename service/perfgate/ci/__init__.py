"""The GitHub Action's step logic (ci/action.yml): what its compare step decides and writes.

The shell steps in ci/scripts/ are thin shims that run `perfgate ci ...`; everything that reads a
document, asks git or a server, or writes a step output lives here, typed and tested.
"""
