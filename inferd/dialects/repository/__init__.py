"""A model repository: a folder (or object-storage prefix) of model folders, each with its own
settings file and dialect, served side by side over V2 and changed while the server runs."""
