"""The platform: what the platforms our users leave had around a model server. Deployments (named
applications) hold immutable versions (content-addressed project bundles); services run a version
(`inferd serve` processes, or a Ray Serve application); endpoints route to services by weight, with
an optional shadow; runs and triggers execute versions over files.

An outer room: it runs model servers as processes and never imports the runtime that serves models.
State is in one SQLite file (`inferd.platform.store`), bundles in an artifact store
(`inferd.platform.artifacts`).
"""
