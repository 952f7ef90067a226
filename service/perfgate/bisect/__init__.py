"""`perfgate bisect`: find the commit that made a benchmark slower with `git bisect run`.

`decide` is the pure rule that turns one step's comparison into git's answer, `gitops` the git
plumbing (temporary worktrees, the bisect itself), `step` the measurement `git bisect run` calls
at each commit, `driver` the whole session (docs/bisect.md).
"""
