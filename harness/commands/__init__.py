"""The bodies of the ``dfsbench`` commands, a module per family: ``run`` and ``check``
(run), ``lab``, ``list`` (listing), ``compare`` and ``report`` (outputs), ``export``,
``verify`` and ``import BUNDLE`` (bundles), ``parse`` and ``import TOOL FILE`` (tools).
harness.cli parses the arguments and dispatches to them; what they share is in common."""
