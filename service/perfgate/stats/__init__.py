"""Pure statistics: summaries, two-sample comparison, noise models, change points, attribution."""
