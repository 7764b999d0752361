"""Tests of the platform layer (`inferd.platform`)."""
