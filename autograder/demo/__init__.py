"""The demo: a simulated class graded end to end, and the side-by-side comparison with nbgrader."""
