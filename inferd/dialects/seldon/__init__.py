"""The Seldon Core v1 dialect: Python components (models, transformers, routers, combiners) on Seldon's
microservice REST and gRPC APIs, and over V2."""
