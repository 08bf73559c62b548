"""dfsbench core: config, plan, runner, store, comparator, renderers, CLI."""

__version__ = "0.1.0"
