"""Packaging a model project to run elsewhere: a Dockerfile for its image, Kubernetes manifests.

Pure text generation from the settings: nothing here serves, and nothing imports the target.
"""
