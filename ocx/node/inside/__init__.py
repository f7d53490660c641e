"""ocx.node.inside."""
