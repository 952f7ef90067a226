"""Pure statistics: summaries, the two-sample comparator, noise models, change points, attribution."""
