"""What is shown of stored runs: limits and flags, statistics, comparison tables, the
regression gate, the view every renderer reads, and the renderers."""
