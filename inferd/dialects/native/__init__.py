"""inferd's own convention: a subclass of `inferd.Model`, served over V2 only."""
