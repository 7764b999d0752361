"""The DEEPaaS V2 dialect: models of the ``deepaas.v2.model`` entry points on DEEPaaS's REST API
(arguments, predict, training jobs, Swagger) and over V2."""
