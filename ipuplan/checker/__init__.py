"""Independent verification of plans and certificates: re-derives every buffer and byte count without solver
code or ortools."""

from .plan import CheckReport, check_dir, check_plan

__all__ = ["CheckReport", "check_dir", "check_plan"]
