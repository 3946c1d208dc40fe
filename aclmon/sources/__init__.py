"""What a viewer reads: live agents, recordings, dump directories, fleet members,
and the ``--once`` collectors. No Textual here (an import contract checks it)."""
