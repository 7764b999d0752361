"""Tests of the embedded gateway (`inferd.platform.gateway`)."""
