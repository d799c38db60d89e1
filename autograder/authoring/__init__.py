"""Authoring tools: the release build, scratch course copies and the self-study notebook builder."""
