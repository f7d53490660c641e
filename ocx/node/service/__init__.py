"""ocx.node.service.serve."""
