"""aclmon.host: every NPU and every process on this host, without an agent.

No Textual here. See docs/host.md.
"""
