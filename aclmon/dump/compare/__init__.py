"""Accuracy compare: ``aclmon compare`` and what the Compare view reads (headless, numpy only)."""
