"""What one ``serve`` is configured with: every setting in one object (the server's and each
dialect's) and the project that holds them. It sits above the dialects, whose settings it gathers,
and below the engines, the CLI and ``deploy``, which read it."""
