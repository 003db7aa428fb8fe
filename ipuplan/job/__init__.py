"""Jobs: what a command runs from inputs to written artefacts (solve → place → check → write, build, what-if),
above the solver, the backend and the checker that they call."""
