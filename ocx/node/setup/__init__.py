"""ocx.node.setup."""
