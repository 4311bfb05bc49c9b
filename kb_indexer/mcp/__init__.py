"""kbindex as a Model Context Protocol server (``kbindex mcp``): a front end over the Python API.

Needs the optional ``mcp`` SDK (``pip install 'kbindex[mcp]'``); nothing else in kbindex imports it.
"""
