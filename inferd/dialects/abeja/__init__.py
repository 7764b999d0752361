"""The ABEJA Platform dialect: 18.10 ``handler(input_iter, context)`` generators and 19.04+
``handler(request, context)`` functions, on ABEJA's HTTP surface and over V2."""
