"""The native agent runtime: a Python agent loop with SDK providers, tools and a session.

Heavy SDKs (openai, anthropic) are imported only when a model client is first built.
See docs/native.md.
"""
