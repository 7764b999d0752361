"""The control API over HTTP (``/platform/v1``): deployments, versions, services and endpoints, with
an OpenAPI document; every route is authenticated like the model server's, and the routes that change
state refuse foreign origins."""
