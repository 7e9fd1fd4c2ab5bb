"""Serving HTTP: the ASGI app, its middleware and limits, the web configuration, uvicorn."""
