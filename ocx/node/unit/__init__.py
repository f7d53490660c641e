"""ocx.node.unit."""
