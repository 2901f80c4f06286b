"""What XLA built: HLO text facts, XLA's dump read back, capture after the samples."""
