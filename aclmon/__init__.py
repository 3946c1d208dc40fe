"""aclmon: a terminal monitor and debugger for the Ascend pyACL runtime."""

__version__ = "0.1.0"
