"""Packaging a model project to run elsewhere: a Dockerfile for its image (`docker`), Kubernetes
manifests (`k8s`), the project as the image holds it (`image`) and the inferd it installs (`wheel`).

Text generated from the project's settings, and at most one wheel of the running inferd: nothing
here serves, and nothing imports the target.
"""
