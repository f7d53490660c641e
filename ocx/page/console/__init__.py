"""The node's web page as a console (D30; docs/console.md): what needs the viewer, what runs, what ended,
the queue, the tools."""
