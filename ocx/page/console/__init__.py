"""The node's web page as a console (issue 17): what needs the viewer, what runs, what ended, the queue, the tools."""
