"""Pipelines over several chips: stage bounds, the stage partition, the pipeline solve job."""
