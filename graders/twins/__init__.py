"""The domain layer: references several katas share (between the engine in core/ and the katas)."""
