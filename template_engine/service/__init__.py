"""The template service: an HTTP API shaped like Run:ai's, on the composition engine.

Install it with ``pip install 'template-engine[service]'``; nothing here imports FastAPI or SQLAlchemy at
import time, so the core CLI works without that extra (see :mod:`template_engine.service.commands`).
"""
